package blob

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/httpjson"
)

// ParseEndpoint checks a provider's endpoint config value: an absolute
// http:// or https:// URL with a host, a port (if any) in 1..65535, and no
// user or password (no '@' anywhere). Its error names every problem found (scheme, host,
// port, credentials) and prints the URL as RedactURL gives it, so a
// password typed into the URL never reaches a log.
func ParseEndpoint(raw string) (*url.URL, error) {
	shown := RedactURL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's message quotes the whole URL, password included;
		// diagnose from the parts instead.
		if p, ok := rawPort(raw); ok && !allDigits(p) {
			return nil, fmt.Errorf("endpoint %q: port %q is not a number", shown, p)
		}
		return nil, fmt.Errorf("endpoint %q is not a valid URL", shown)
	}
	var why []string
	if u.Scheme != "http" && u.Scheme != "https" {
		why = append(why, fmt.Sprintf("scheme must be http or https, got %q", u.Scheme))
	}
	if u.Host == "" || u.Hostname() == "" {
		why = append(why, "no host")
	} else if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			why = append(why, fmt.Sprintf("port %q is not in 1..65535", p))
		}
	}
	if u.User != nil || strings.Contains(raw, "@") {
		why = append(why, "it must not contain a user or password (use the credentials section)")
	}
	if len(why) > 0 {
		return nil, fmt.Errorf("endpoint %q: %s", shown, strings.Join(why, "; "))
	}
	return u, nil
}

// RedactURL returns raw with its user:password part replaced by
// "<redacted>" (httpjson.RedactURL, the one implementation).
func RedactURL(raw string) string { return httpjson.RedactURL(raw) }

// URLErrorCause returns the cause inside err's *url.Error, or err
// (httpjson.URLErrorCause).
func URLErrorCause(err error) error { return httpjson.URLErrorCause(err) }

// rawPort returns what follows the last ':' of the host part of raw's
// authority, if there is one (not inside an IPv6 literal).
func rawPort(raw string) (string, bool) {
	auth := raw
	if i := strings.Index(auth, "://"); i >= 0 {
		auth = auth[i+3:]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if i := strings.LastIndexByte(auth, ']'); i >= 0 {
		auth = auth[i+1:]
	}
	i := strings.LastIndexByte(auth, ':')
	if i < 0 {
		return "", false
	}
	return auth[i+1:], true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
