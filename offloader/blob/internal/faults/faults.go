package faults

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Kind is what a rule does.
type Kind int

const (
	// Status answers Status with an XML error Code, without forwarding.
	Status Kind = iota + 1
	// TruncateBody forwards, then sends the headers (with the full
	// Content-Length) and only KeepBytes of the body.
	TruncateBody
	// ResetBeforeForward resets the connection without forwarding.
	ResetBeforeForward
	// ResetAfterForward forwards (the server applies the request), then
	// resets the connection instead of answering: a lost response.
	ResetAfterForward
	// CorruptRequestBody flips one byte in the middle of the request body
	// and forwards it with the original headers (Content-MD5 included).
	CorruptRequestBody
	// RewriteResponse forwards, then lets Rewrite change the response
	// headers before they are sent (a lying server).
	RewriteResponse
)

// Rule injects a fault into matching requests.
type Rule struct {
	// Match selects requests; nil matches all.
	Match func(r *http.Request) bool
	// Times is how many matching requests get the fault; 0 means all.
	Times int
	Kind  Kind
	// Status and Code for Kind Status (e.g. 503 "SlowDown").
	Status int
	Code   string
	// KeepBytes for TruncateBody.
	KeepBytes int
	// Rewrite for RewriteResponse.
	Rewrite func(h http.Header)
}

type rule struct {
	Rule
	fired atomic.Int64
}

// Request is a recorded request.
type Request struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	// Fault is the kind injected (0: none).
	Fault Kind
}

// Proxy is the fault-injecting handler.
type Proxy struct {
	upstream http.Handler
	mu       sync.Mutex
	rules    []*rule
	reqs     []Request
}

// New wraps an in-process upstream handler.
func New(upstream http.Handler) *Proxy { return &Proxy{upstream: upstream} }

// NewReverse proxies to a server at target (e.g. versitygw), keeping the
// Host header the client sent (S3 signatures cover it).
func NewReverse(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
	}
	return New(rp), nil
}

// Add appends a rule; the first rule that matches and has not run out
// applies.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &rule{Rule: r})
}

// Reset removes all rules and recorded requests.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules, p.reqs = nil, nil
}

// Requests returns the requests seen so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// Count returns how many recorded requests satisfy f.
func (p *Proxy) Count(f func(Request) bool) int {
	n := 0
	for _, r := range p.Requests() {
		if f(r) {
			n++
		}
	}
	return n
}

func (p *Proxy) pick(r *http.Request) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ru := range p.rules {
		if ru.Match != nil && !ru.Match(r) {
			continue
		}
		if ru.Times > 0 && ru.fired.Load() >= int64(ru.Times) {
			continue
		}
		ru.fired.Add(1)
		return ru
	}
	return nil
}

// ServeHTTP applies the first live matching rule, or forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ru := p.pick(r)
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone()}
	if ru != nil {
		rec.Fault = ru.Kind
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, rec)
	p.mu.Unlock()
	if ru == nil {
		p.upstream.ServeHTTP(w, r)
		return
	}
	switch ru.Kind {
	case Status:
		io.Copy(io.Discard, r.Body)
		body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected fault</Message><RequestId>fault</RequestId></Error>`, ru.Code)
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(ru.Status)
		if r.Method != http.MethodHead {
			io.WriteString(w, body)
		}
	case ResetBeforeForward:
		io.Copy(io.Discard, r.Body)
		reset(w)
	case ResetAfterForward:
		rr := httptest.NewRecorder()
		p.upstream.ServeHTTP(rr, r)
		reset(w)
	case TruncateBody:
		rr := httptest.NewRecorder()
		p.upstream.ServeHTTP(rr, r)
		for k, vs := range rr.Header() {
			w.Header()[k] = vs
		}
		body := rr.Body.Bytes()
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rr.Code)
		keep := min(ru.KeepBytes, len(body))
		w.Write(body[:keep])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		closeConn(w, false)
	case CorruptRequestBody:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			reset(w)
			return
		}
		if len(b) > 0 {
			b[len(b)/2] ^= 0x5a
		}
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(b))
		r2.ContentLength = int64(len(b))
		p.upstream.ServeHTTP(w, r2)
	case RewriteResponse:
		rr := httptest.NewRecorder()
		p.upstream.ServeHTTP(rr, r)
		for k, vs := range rr.Header() {
			w.Header()[k] = vs
		}
		ru.Rewrite(w.Header())
		w.WriteHeader(rr.Code)
		w.Write(rr.Body.Bytes())
	default:
		panic(fmt.Sprintf("faults: unknown kind %d", ru.Kind))
	}
}

// reset closes the client connection with a TCP RST.
func reset(w http.ResponseWriter) { closeConn(w, true) }

// closeConn closes the client connection, with an RST if rst.
func closeConn(w http.ResponseWriter, rst bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faults: connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	conn.Close()
}

// Method matches requests by method and a query parameter present ("" for
// none), e.g. Method("PUT", "partNumber") matches UploadPart.
func Method(method, queryParam string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if r.Method != method {
			return false
		}
		if queryParam == "" {
			return true
		}
		_, ok := r.URL.Query()[queryParam]
		return ok
	}
}

// PutObject matches PUT requests that are not parts (Put).
func PutObject(r *http.Request) bool { return r.Method == "PUT" && !r.URL.Query().Has("partNumber") }

// UploadPart matches part uploads.
func UploadPart(r *http.Request) bool { return Method("PUT", "partNumber")(r) }

// CompleteMultipart matches Complete requests.
func CompleteMultipart(r *http.Request) bool { return Method("POST", "uploadId")(r) }

// PathHasSuffix matches requests whose path ends with s.
func PathHasSuffix(s string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, s) }
}

// And combines matchers.
func And(ms ...func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}
