package cos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
)

func TestSecretsNeverLeak(t *testing.T) {
	var p *faults.Proxy
	f := cosfake.Start(t, func(h http.Handler) http.Handler { p = faults.New(h); return p })
	bucket := f.NewBucket(t)
	const secret = "CANARYsecretKEY0123456789abcdefCANARY"
	const token = "CANARYsessionTOKEN9876543210CANARY"
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	cfg := fakeConfig(f, bucket)
	cfg.Credentials.SecretKey = secret // wrong: cosfake refuses the signature
	cfg.Credentials.SessionToken = token
	log.Info("config", "cfg", cfg)
	s, err := New(cfg, Options{Logger: log, DialContext: f.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	_, err = s.Put(faults.Context(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	errs = append(errs, err)
	_, err = s.Head(faults.Context(t), "k")
	errs = append(errs, err)
	errs = append(errs, s.Iter(faults.Context(t), "", func(blob.Attrs) error { return nil }))
	_, err = s.CreateMultipart(faults.Context(t), "mp", blob.PutOptions{})
	errs = append(errs, err)

	// Valid keys, failing parts: retries are logged.
	p.Add(faults.Rule{Match: faults.UploadPart, Kind: faults.Status, Status: 503, Code: "SlowDown"})
	good := fakeConfig(f, bucket)
	good.Credentials.SessionToken = token
	gs, err := New(good, Options{Logger: log, DialContext: f.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := gs.CreateMultipart(faults.Context(t), "mp", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs = append(errs, mp.UploadPart(faults.Context(t), 1, []byte("x")))
	mp.Abort(faults.Context(t))

	for i, err := range errs {
		if err == nil {
			t.Errorf("operation %d succeeded unexpectedly", i)
			continue
		}
		for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err)} {
			if strings.Contains(form, secret) || strings.Contains(form, token) {
				t.Errorf("error %d leaks a credential: %s", i, form)
			}
		}
	}
	if !strings.Contains(errs[0].Error(), "SignatureDoesNotMatch") {
		t.Errorf("wrong secret gave %v, want SignatureDoesNotMatch", errs[0])
	}
	j, _ := json.Marshal(cfg)
	for _, form := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), string(j), logs.String()} {
		if strings.Contains(form, secret) || strings.Contains(form, token) {
			t.Errorf("credential leaked: %.300s", form)
		}
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("expected retry logs:\n%.2000s", logs.String())
	}
}
