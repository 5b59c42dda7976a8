package cosfake

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SafeURLEncode percent-encodes s as COS signing does: every byte except
// A-Z a-z 0-9 - _ . ~ becomes %XX with upper-case hex.
func SafeURLEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Pair is one signed name/value (a header or a query parameter). Names
// are raw; Format encodes them.
type Pair struct{ Name, Value string }

// FormatPairs builds the signed "k=v&k=v" string and the ";"-joined name
// list: names encoded then lower-cased, values encoded, sorted by name then
// value; a name with several values repeats.
func FormatPairs(pairs []Pair) (formatted, list string) {
	type item struct{ name, raw, enc string }
	items := make([]item, len(pairs))
	for i, p := range pairs {
		items[i] = item{strings.ToLower(SafeURLEncode(p.Name)), p.Value, SafeURLEncode(p.Value)}
	}
	// The SDK sorts the raw values of a name, then encodes each.
	sort.Slice(items, func(i, j int) bool {
		if items[i].name != items[j].name {
			return items[i].name < items[j].name
		}
		return items[i].raw < items[j].raw
	})
	kv := make([]string, len(items))
	names := make([]string, len(items))
	for i, it := range items {
		kv[i] = it.name + "=" + it.enc
		names[i] = it.name
	}
	sort.Strings(names)
	return strings.Join(kv, "&"), strings.Join(names, ";")
}

// SignKey is hex(HMAC-SHA1(secretKey, keyTime)).
func SignKey(secretKey, keyTime string) string {
	m := hmac.New(sha1.New, []byte(secretKey))
	m.Write([]byte(keyTime))
	return hex.EncodeToString(m.Sum(nil))
}

// HTTPString is lower(method) \n path \n params \n headers \n.
func HTTPString(method, path, params, headers string) string {
	return strings.ToLower(method) + "\n" + path + "\n" + params + "\n" + headers + "\n"
}

// Signature computes q-signature for an HTTP string.
func Signature(secretKey, keyTime, httpString string) string {
	h := sha1.Sum([]byte(httpString))
	stringToSign := "sha1\n" + keyTime + "\n" + hex.EncodeToString(h[:]) + "\n"
	m := hmac.New(sha1.New, []byte(SignKey(secretKey, keyTime)))
	m.Write([]byte(stringToSign))
	return hex.EncodeToString(m.Sum(nil))
}

// authorization is a parsed COS signature.
type authorization struct {
	algorithm, ak, signTime, keyTime string
	headerList, paramList            string
	signature                        string
}

// parseAuthorization splits "q-sign-algorithm=sha1&q-ak=...&..." (split on
// '&', then on the first '=').
func parseAuthorization(s string) (authorization, bool) {
	var a authorization
	seen := 0
	for _, kv := range strings.Split(s, "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "q-sign-algorithm":
			a.algorithm = v
		case "q-ak":
			a.ak = v
		case "q-sign-time":
			a.signTime = v
		case "q-key-time":
			a.keyTime = v
		case "q-header-list":
			a.headerList = v
		case "q-url-param-list":
			a.paramList = v
		case "q-signature":
			a.signature = v
		default:
			continue
		}
		seen++
	}
	return a, seen > 0 && a.signature != ""
}

// fromQuery reads a signature passed as q-* query parameters (presigned).
func fromQuery(q url.Values) (authorization, bool) {
	a := authorization{
		algorithm: q.Get("q-sign-algorithm"), ak: q.Get("q-ak"), signTime: q.Get("q-sign-time"),
		keyTime: q.Get("q-key-time"), headerList: q.Get("q-header-list"), paramList: q.Get("q-url-param-list"),
		signature: q.Get("q-signature"),
	}
	return a, a.signature != ""
}

// parseTimes parses "start;end" unix seconds.
func parseTimes(s string) (start, end time.Time, ok bool) {
	a, b, found := strings.Cut(s, ";")
	if !found {
		return time.Time{}, time.Time{}, false
	}
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || y < x {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(x, 0), time.Unix(y, 0), true
}

// requestHeaderValues returns the values of header name (lower case) as
// the server sees them: host from r.Host, content-length from the header,
// transfer-encoding from r.TransferEncoding.
func requestHeaderValues(r *http.Request, name string) []string {
	switch name {
	case "host":
		return []string{r.Host}
	case "transfer-encoding":
		return r.TransferEncoding
	}
	return r.Header.Values(http.CanonicalHeaderKey(name))
}

// signError is a 403 with a COS error code.
type signError struct{ code, msg string }

func (e *signError) Error() string { return e.code + ": " + e.msg }

// verify checks r's COS signature against the secret of its q-ak.
func verify(r *http.Request, secrets map[string]string, now time.Time, maxSkew time.Duration) error {
	query := r.URL.Query()
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	inQuery := false
	if !ok {
		if a, ok = fromQuery(query); !ok {
			return &signError{"AccessDenied", "no COS signature in the Authorization header or query"}
		}
		inQuery = true
	}
	secret, known := secrets[a.ak]
	if a.algorithm != "sha1" || !known {
		return &signError{"InvalidAccessKeyId", "unknown access key or algorithm"}
	}
	start, end, ok := parseTimes(a.keyTime)
	if !ok {
		return &signError{"AccessDenied", "malformed q-key-time"}
	}
	if a.signTime != "" {
		if _, _, ok := parseTimes(a.signTime); !ok {
			return &signError{"AccessDenied", "malformed q-sign-time"}
		}
	}
	if now.After(end) {
		return &signError{"AccessDenied", "Request has expired"}
	}
	if start.After(now.Add(maxSkew)) {
		return &signError{"RequestTimeTooSkewed", "the difference between the request time and the server's time is too large"}
	}

	// Parameters: every query parameter is signed (minus q-* when the
	// signature itself is in the query).
	var params []Pair
	for k, vs := range query {
		if inQuery && strings.HasPrefix(k, "q-") {
			continue
		}
		for _, v := range vs {
			params = append(params, Pair{k, v})
		}
	}
	formattedParams, paramList := FormatPairs(params)
	if paramList != a.paramList {
		return &signError{"SignatureDoesNotMatch", fmt.Sprintf("q-url-param-list %q does not cover the request's parameters %q", a.paramList, paramList)}
	}

	// Headers: the ones the client listed, with the values we received.
	var headers []Pair
	listed := map[string]int{}
	for _, n := range strings.Split(a.headerList, ";") {
		if n != "" {
			listed[n]++
		}
	}
	for n, count := range listed {
		vals := requestHeaderValues(r, n)
		if len(vals) != count {
			return &signError{"SignatureDoesNotMatch", fmt.Sprintf("signed header %q: %d values signed, %d received", n, count, len(vals))}
		}
		for _, v := range vals {
			headers = append(headers, Pair{n, v})
		}
	}
	if listed["host"] == 0 {
		return &signError{"AccessDenied", "the host header must be signed"}
	}
	for k := range r.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-cos-") && listed[SafeURLEncode(lk)] == 0 {
			return &signError{"AccessDenied", fmt.Sprintf("header %s must be signed", lk)}
		}
	}
	formattedHeaders, _ := FormatPairs(headers)
	want := Signature(secret, a.keyTime, HTTPString(r.Method, r.URL.Path, formattedParams, formattedHeaders))
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return &signError{"SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided"}
	}
	return nil
}
