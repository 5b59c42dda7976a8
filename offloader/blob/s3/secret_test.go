package s3

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Credentials never appear in errors, logs or formatted configs, whether
// the server rejects them or fails in other ways.
func TestSecretsNeverLeak(t *testing.T) {
	srv := testenv.StartS3(t)
	bucket := srv.NewBucket(t)
	const secret = "CANARYsecretKEY0123456789abcdefCANARY"
	const token = "CANARYsessionTOKEN9876543210CANARY"
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	p, _ := faults.NewReverse(srv.Endpoint)
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	p.Add(faults.Rule{Match: faults.UploadPart, Kind: faults.Status, Status: 503, Code: "SlowDown"})

	cfg := staticConfig(srv, bucket)
	cfg.Endpoint = ts.URL
	cfg.Credentials.SecretAccessKey = secret // wrong: the server refuses it
	cfg.Retry = Retry{MaxAttempts: 3, MaxBackoff: blob.Duration(time.Millisecond)}
	log.Info("config", "cfg", cfg)
	s := newTestStore(t, cfg, Options{Logger: log})
	// versitygw refuses session tokens (InvalidToken): another failure
	// whose error must not carry the token.
	withToken := staticConfig(srv, bucket)
	withToken.Endpoint = ts.URL
	withToken.Credentials.SessionToken = token
	withToken.Retry = cfg.Retry
	log.Info("config", "cfg", withToken)
	ts2 := newTestStore(t, withToken, Options{Logger: log})

	var errs []error
	_, err := s.Put(faults.Context(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	errs = append(errs, err)
	_, err = s.Head(faults.Context(t), "k")
	errs = append(errs, err)
	errs = append(errs, s.Iter(faults.Context(t), "", func(blob.Attrs) error { return nil }))
	_, err = faults.Upload(faults.Context(t), s, "mp", faults.RandBytes(10))
	errs = append(errs, err)
	_, err = ts2.Put(faults.Context(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	errs = append(errs, err)

	// With valid keys, failing parts make the SDK log retries.
	good := staticConfig(srv, bucket)
	good.Endpoint = ts.URL
	good.Retry = cfg.Retry
	gs := newTestStore(t, good, Options{Logger: log})
	mp, err := gs.CreateMultipart(faults.Context(t), "mp", blob.PutOptions{})
	if err == nil {
		errs = append(errs, mp.UploadPart(faults.Context(t), 1, []byte("x")))
		mp.Abort(faults.Context(t))
	} else {
		errs = append(errs, err)
	}

	for i, err := range errs {
		if err == nil {
			t.Errorf("operation %d succeeded with a wrong secret", i)
			continue
		}
		for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(form, secret) || strings.Contains(form, token) {
				t.Errorf("error %d leaks a credential: %s", i, form)
			}
		}
	}
	if !strings.Contains(errs[0].Error(), "SignatureDoesNotMatch") || !errors.Is(errs[0], blob.ErrAccessDenied) {
		t.Errorf("wrong secret gave %v, want SignatureDoesNotMatch / ErrAccessDenied", errs[0])
	}
	j, _ := json.Marshal(withToken)
	for _, form := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", withToken), fmt.Sprintf("%#v", withToken), string(j), logs.String()} {
		if strings.Contains(form, secret) || strings.Contains(form, token) {
			t.Errorf("credential leaked: %.300s", form)
		}
	}
	if !strings.Contains(logs.String(), "retry") && !strings.Contains(logs.String(), "Retry") {
		t.Errorf("expected SDK retry logs (the test would not see leaks in them):\n%.2000s", logs.String())
	}
}
