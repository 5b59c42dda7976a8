// Package httpjson is the one way the commands and libraries read a JSON
// document over HTTP from a peer (a bookie agent, a running offloader's
// /status): one GET bounded in time and in size, whose errors name the URL
// with any user:password replaced by "<redacted>" and say what they waited
// for.
package httpjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultMaxBytes bounds a document when Options.MaxBytes is 0.
const DefaultMaxBytes = 16 << 20

// Options configure Get.
type Options struct {
	// Client does the request. Default http.DefaultClient.
	Client *http.Client
	// Timeout bounds the whole request, body included; required (> 0).
	Timeout time.Duration
	// MaxBytes bounds the document read. Default DefaultMaxBytes.
	MaxBytes int64
	// What names the document in a decode error ("an agent report").
	// Default "a JSON document".
	What string
	// Accept lists the statuses besides 200 whose body is decoded (the
	// agent's /recommendation answers 404 before a benchmark).
	Accept []int
}

// StatusError is the error (wrapped) for a status Get does not accept:
// the status line and the start of the body ("503 Service Unavailable:
// agent down").
type StatusError struct {
	Code   int
	Status string
	Body   string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return e.Status
	}
	return e.Status + ": " + e.Body
}

// Get GETs rawURL and decodes its JSON body into v (when v is not nil),
// returning the body read. Every error starts "GET <redacted URL>: ".
func Get(ctx context.Context, rawURL string, v any, o Options) ([]byte, error) {
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("GET %s: httpjson.Options.Timeout %s: want > 0", RedactURL(rawURL), o.Timeout)
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.What == "" {
		o.What = "a JSON document"
	}
	shown := RedactURL(rawURL)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: not a valid URL: %w", shown, URLErrorCause(err))
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		err = URLErrorCause(err)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: no answer within %s: %w", shown, o.Timeout, err)
		}
		return nil, fmt.Errorf("GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && !slices.Contains(o.Accept, resp.StatusCode) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("GET %s: %w", shown, &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: strings.TrimSpace(string(b))})
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: no complete answer within %s: %w", shown, o.Timeout, err)
		}
		return nil, fmt.Errorf("GET %s: reading the answer: %w", shown, err)
	}
	if int64(len(body)) > o.MaxBytes {
		return nil, fmt.Errorf("GET %s: the answer is larger than %d bytes", shown, o.MaxBytes)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return nil, fmt.Errorf("GET %s: not %s: %w", shown, o.What, err)
		}
	}
	return body, nil
}

// RedactURL returns raw with everything between the scheme's "://" (or the
// start, without one) and the last '@' replaced by "<redacted>": the
// user:password part, however it is spelled (a password may hold '/' or
// '?'; it is better to hide too much of a bad URL than a secret). It works
// on strings url.Parse refuses.
func RedactURL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	at := strings.LastIndexByte(raw[start:], '@')
	if at < 0 {
		return raw
	}
	return raw[:start] + "<redacted>" + raw[start+at:]
}

// URLErrorCause returns the cause inside err's *url.Error, or err: that
// wrapper's message repeats the URL (url.Parse's quotes it whole,
// password included). Print the URL through RedactURL beside it.
func URLErrorCause(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
