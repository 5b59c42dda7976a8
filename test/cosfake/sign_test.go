package cosfake

import (
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The worked examples of COS's signature (from the SDK's auth_test.go and
// COS document 7778), recomputed by our signer.
func TestSignatureWorkedExamples(t *testing.T) {
	cases := []struct {
		name, secret, keyTime, method, path string
		params, headers                     []Pair
		signKey, httpSHA1, signature        string
		headerList, paramList               string
	}{
		{
			name: "sdk auth_test", secret: "AKIDZfbOA78asKUYBcXFrJD0a1ICvR98JM", keyTime: "1480932292;1481012292",
			method: "PUT", path: "/testfile2",
			headers: []Pair{
				{"Host", "testbucket-125000000.cos.ap-guangzhou.myqcloud.com"},
				{"x-cos-content-sha1", "db8ac1c259eb89d4a131b253bacfca5f319d54f2"},
				{"x-cos-stroage-class", "nearline"},
			},
			signKey: "95d110a8ead64cac52083100db75b7e3f369e72f", httpSHA1: "113b22e92b74237531fafbfc8bb9e67be55645c7",
			signature:  "ce4ac0ecbcdb30538b3fee0a97cc6389694ce53a",
			headerList: "host;x-cos-content-sha1;x-cos-stroage-class",
		},
		{
			name: "doc 7778 PUT", secret: "BQYIM75p8x0iWVFSIgqEKwFprpRSVHlz", keyTime: "1557989151;1557996351",
			method: "PUT", path: "/exampleobject(腾讯云)",
			headers: []Pair{
				{"Date", "Thu, 16 May 2019 06:45:51 GMT"},
				{"Host", "examplebucket-1250000000.cos.ap-beijing.myqcloud.com"},
				{"Content-Type", "text/plain"},
				{"Content-Length", "13"},
				{"Content-MD5", "mQ/fVh815F3k6TAUm8m0eg=="},
				{"x-cos-acl", "private"},
				{"x-cos-grant-read", `uin="100000000011"`},
			},
			signKey: "eb2519b498b02ac213cb1f3d1a3d27a3b3c9bc5f", httpSHA1: "8b2751e77f43a0995d6e9eb9477f4b685cca4172",
			signature:  "3b8851a11a569213c17ba8fa7dcf2abec6935172",
			headerList: "content-length;content-md5;content-type;date;host;x-cos-acl;x-cos-grant-read",
		},
		{
			name: "doc 7778 GET", secret: "BQYIM75p8x0iWVFSIgqEKwFprpRSVHlz", keyTime: "1557989753;1557996953",
			method: "GET", path: "/exampleobject(腾讯云)",
			params: []Pair{{"response-content-type", "application/octet-stream"}, {"response-cache-control", "max-age=600"}},
			headers: []Pair{
				{"Date", "Thu, 16 May 2019 06:55:53 GMT"},
				{"Host", "examplebucket-1250000000.cos.ap-beijing.myqcloud.com"},
			},
			signKey: "937914bf490e9e8c189836aad2052e4feeb35eaf", signature: "01681b8c9d798a678e43b685a9f1bba0f6c0e012",
			headerList: "date;host", paramList: "response-cache-control;response-content-type",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.signKey != "" {
				if got := SignKey(c.secret, c.keyTime); got != c.signKey {
					t.Errorf("SignKey = %s, want %s", got, c.signKey)
				}
			}
			fp, pl := FormatPairs(c.params)
			fh, hl := FormatPairs(c.headers)
			if hl != c.headerList || pl != c.paramList {
				t.Errorf("lists = %q / %q, want %q / %q", hl, pl, c.headerList, c.paramList)
			}
			hs := HTTPString(c.method, c.path, fp, fh)
			if c.httpSHA1 != "" {
				if got := sha1hex(hs); got != c.httpSHA1 {
					t.Errorf("SHA1(HttpString) = %s, want %s\nHttpString: %q", got, c.httpSHA1, hs)
				}
			}
			if got := Signature(c.secret, c.keyTime, hs); got != c.signature {
				t.Errorf("signature = %s, want %s", got, c.signature)
			}
		})
	}
}

// The server-side verifier accepts the doc example as a real request
// (clock pinned inside the validity window) and rejects any change.
func TestVerifyRequest(t *testing.T) {
	secrets := map[string]string{"AKIDQjz3ltompVjBni5LitkWHFlFpwkn9U5q": "BQYIM75p8x0iWVFSIgqEKwFprpRSVHlz"}
	build := func() *http.Request {
		u, _ := url.Parse("http://examplebucket-1250000000.cos.ap-beijing.myqcloud.com/exampleobject(%E8%85%BE%E8%AE%AF%E4%BA%91)?response-content-type=application%2Foctet-stream&response-cache-control=max-age%3D600")
		r := &http.Request{Method: "GET", URL: u, Host: u.Host, Header: http.Header{}}
		r.Header.Set("Date", "Thu, 16 May 2019 06:55:53 GMT")
		r.Header.Set("Authorization", "q-sign-algorithm=sha1&q-ak=AKIDQjz3ltompVjBni5LitkWHFlFpwkn9U5q&q-sign-time=1557989753;1557996953&q-key-time=1557989753;1557996953&q-header-list=date;host&q-url-param-list=response-cache-control;response-content-type&q-signature=01681b8c9d798a678e43b685a9f1bba0f6c0e012")
		return r
	}
	inWindow := time.Unix(1557990000, 0)
	if err := verify(build(), secrets, inWindow, 15*time.Minute); err != nil {
		t.Fatalf("valid doc request rejected: %v", err)
	}
	mutations := map[string]struct {
		mut  func(*http.Request)
		now  time.Time
		code string
	}{
		"tampered date":   {func(r *http.Request) { r.Header.Set("Date", "Fri, 17 May 2019 06:55:53 GMT") }, inWindow, "SignatureDoesNotMatch"},
		"other bucket":    {func(r *http.Request) { r.Host = "otherbucket-1250000000.cos.ap-beijing.myqcloud.com" }, inWindow, "SignatureDoesNotMatch"},
		"extra param":     {func(r *http.Request) { r.URL.RawQuery += "&versionId=1" }, inWindow, "SignatureDoesNotMatch"},
		"other path":      {func(r *http.Request) { r.URL.Path = "/exampleobject" }, inWindow, "SignatureDoesNotMatch"},
		"unsigned x-cos":  {func(r *http.Request) { r.Header.Set("x-cos-meta-evil", "1") }, inWindow, "AccessDenied"},
		"expired":         {func(*http.Request) {}, time.Unix(1557996954, 0), "AccessDenied"},
		"from the future": {func(*http.Request) {}, time.Unix(1557989753-16*60, 0), "RequestTimeTooSkewed"},
		"unknown key": {func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "q-ak=AKID", "q-ak=XXID", 1))
		}, inWindow, "InvalidAccessKeyId"},
		"no signature": {func(r *http.Request) { r.Header.Del("Authorization") }, inWindow, "AccessDenied"},
	}
	for name, m := range mutations {
		r := build()
		m.mut(r)
		err := verify(r, secrets, m.now, 15*time.Minute)
		se, ok := err.(*signError)
		if !ok || se.code != m.code {
			t.Errorf("%s: verify = %v, want %s", name, err, m.code)
		}
	}
}

func TestCRC64Vectors(t *testing.T) {
	for in, want := range map[string]uint64{"123456789": 11051210869376104954, "abc": 3231342946509354535, "": 0} {
		if got := crc64Of([]byte(in)); got != want {
			t.Errorf("crc64(%q) = %d, want %d", in, got, want)
		}
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("q-sign-algorithm=sha1&q-ak=a&q-sign-time=1;2&q-key-time=1;2&q-header-list=host&q-url-param-list=&q-signature=00")
	f.Add("&&==&q-signature")
	f.Fuzz(func(t *testing.T, s string) {
		a, _ := parseAuthorization(s)
		parseTimes(a.keyTime)
	})
}

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
