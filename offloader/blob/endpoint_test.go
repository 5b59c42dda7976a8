package blob_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Endpoint errors name what is wrong and never print a password
// ("ftp://u:SECRET@h:1" used to print the password; "http://u:SECRET@h:bad"
// printed it and blamed the scheme).
func TestParseEndpointErrors(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []string // all in the error
		notWant []string // none in the error
	}{
		{"ftp://u:SECRET@h:1", []string{"scheme must be http or https", `"ftp"`, "user or password", "<redacted>@h:1"}, nil},
		{"http://u:SECRET@h:bad", []string{`port "bad" is not a number`, "<redacted>@h:bad"}, []string{"scheme"}},
		{"http://u:SECRET@h:1", []string{"user or password"}, []string{"scheme", "port"}},
		{"https://h:99999", []string{`port "99999" is not in 1..65535`}, []string{"scheme"}},
		{"https://h:0", []string{`port "0"`}, nil},
		{"http://u:SE/CRET@h:1", []string{"<redacted>@h:1"}, nil},
		{"http://u:SE%zzCRET@h", []string{"not a valid URL", "<redacted>@h"}, nil},
		{"u:SECRET@h:1", []string{"scheme", "<redacted>@h:1"}, nil},
		{"http://", []string{"no host"}, nil},
		{"http:///path", []string{"no host"}, nil},
		{"h:1", []string{"scheme must be http or https"}, nil},
		{"http://[::1]:x", []string{`port "x" is not a number`}, nil},
	} {
		_, err := blob.ParseEndpoint(c.in)
		if err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", c.in)
			continue
		}
		msg := err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("ParseEndpoint(%q) = %q, want it to contain %q", c.in, msg, w)
			}
		}
		for _, w := range append(c.notWant, "SECRET", "CRET", "SE%zz") {
			if strings.Contains(msg, w) {
				t.Errorf("ParseEndpoint(%q) = %q: contains %q", c.in, msg, w)
			}
		}
	}
	for _, ok := range []string{"http://127.0.0.1:9000", "https://cos.ap-guangzhou.myqcloud.com", "https://b-125.cos.ap-guangzhou.myqcloud.com/", "http://[::1]:80"} {
		if _, err := blob.ParseEndpoint(ok); err != nil {
			t.Errorf("ParseEndpoint(%q): %v", ok, err)
		}
	}
}

func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"ftp://u:SECRET@h:1", "http://u:SE/CRET@h", "u:p@h", "http://h", "@", "://@"} {
		f.Add(s, "SECRET")
	}
	f.Fuzz(func(t *testing.T, user, pass string) {
		if pass == "" || strings.ContainsAny(pass, "@") {
			return
		}
		for _, raw := range []string{"http://" + user + ":" + pass + "@host:1/p", user + ":" + pass + "@h"} {
			if strings.Contains(user, "@") {
				continue
			}
			if got := blob.RedactURL(raw); strings.Contains(got, ":"+pass+"@") {
				t.Fatalf("RedactURL(%q) = %q keeps the password", raw, got)
			}
			if _, err := blob.ParseEndpoint(raw); err == nil {
				t.Fatalf("ParseEndpoint(%q) accepted credentials", raw)
			} else if strings.Contains(err.Error(), ":"+pass+"@") {
				t.Fatalf("ParseEndpoint(%q) error %q keeps the password", raw, err)
			}
		}
	})
}

func TestURLErrorCause(t *testing.T) {
	bad := []string{"http://tk:SECRET-pw@host:9x/p"} // a slice: no vet of a constant URL
	_, err := url.Parse(bad[0])
	if err == nil || !strings.Contains(err.Error(), "SECRET-pw") {
		t.Fatalf("url.Parse error %v: want one quoting the URL", err)
	}
	if c := blob.URLErrorCause(err); c == nil || strings.Contains(c.Error(), "SECRET-pw") || !strings.Contains(c.Error(), `invalid port ":9x"`) {
		t.Errorf("URLErrorCause = %v", c)
	}
	other := errors.New("plain")
	if c := blob.URLErrorCause(fmt.Errorf("wrapped: %w", other)); c.Error() != "wrapped: plain" {
		t.Errorf("URLErrorCause of a plain error = %v", c)
	}
}
