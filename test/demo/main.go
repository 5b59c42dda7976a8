// Command demo is `make demo`: tierkeeper's main job on 127.0.0.1, done
// the way the service does it. It starts ZooKeeper, three bookies,
// versitygw and a stock Pulsar 4.0.8 broker (all from `make deps`),
// produces messages through the broker with Pulsar's Java client, shows
// `offloader plan` for a policy (keep the newest 4 MiB of the topic on
// BookKeeper, delete the BookKeeper copy 1 s after each commit), runs
// `offloader run` with that policy and, on a terminal, `offloader status
// --service --watch` (per-topic lag and bytes offloaded, redrawn in place;
// nothing while it runs when stdout is not a terminal) until the backlog
// is offloaded and trimmed, then stops the service, reads every message
// back through the broker from the earliest position and prints a short
// report. The last line says how many messages were read back and how many
// of them came from the object store. Everything stops and is removed at
// the end; the service's log is printed if something fails.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func main() {
	bin := flag.String("offloader", "bin/offloader", "the offloader binary (make build)")
	count := flag.Int("messages", 2050, "messages to produce (100 per ledger)")
	flag.Parse()
	os.Exit(run(*bin, *count))
}

// clock prints the demo's progress lines.
type clock struct{ start time.Time }

func (c clock) say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

const (
	topic      = "persistent://public/default/demo-orders"
	keepBytes  = 4 << 20
	secretEnv  = "TK_DEMO_S3_SECRET"
	waitBudget = 3 * time.Minute // for the service to offload and trim the backlog
)

// serviceConfig is the demo's offloader.yaml (the secret from the
// environment, as in configs/offloader.yaml).
func serviceConfig(st *testenv.Stack, listen string) string {
	return fmt.Sprintf(`zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}
bookkeeper: {ledgers_root: %q}
%sadmin: {url: %q, timeout: 10s}
http: {listen: %q}
leases: {id: demo}
scheduler: {ledgers_in_flight: 2, interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: 20s, min_reload_interval: 0s}
discovery: {rescan_interval: 30s}
policy:
  include: [public/default]
  rules:
    - name: orders
      match: [public/default/demo-orders]
      after: 1h            # older ledgers go anyway; none is that old here
      keep_bytes: 4MiB     # keep the newest 4 MiB of the topic on BookKeeper
      deletion_lag: 1s     # then delete the BookKeeper copy 1s after each commit
      verify: full         # every entry compared with the bookies' before the commit
sweeper: {enabled: false}
`, st.ZK.Addr, st.BK.LedgersRoot, s3test.StoreYAML(st.S3, st.Bucket, secretEnv), st.Broker.WebURL, listen)
}

func run(bin string, count int) int {
	c := clock{time.Now()}
	scope := testenv.NewSharedTB("demo")
	defer scope.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var serviceLog string
	fail := func(what string, err error) int {
		if serviceLog != "" {
			if b, rerr := os.ReadFile(serviceLog); rerr == nil {
				fmt.Fprintf(os.Stderr, "--- the service's log (%s)\n%s---\n", serviceLog, tail(string(b), 60))
			}
		}
		fmt.Fprintf(os.Stderr, "demo: %s: %v\n", what, err)
		return 1
	}
	if _, err := os.Stat(bin); err != nil {
		return fail("offloader binary", fmt.Errorf("%w (run make build)", err))
	}
	fmt.Println("tierkeeper demo: the offload service moves a Pulsar topic's closed ledgers from BookKeeper to an S3 store by policy; a stock broker reads them back")
	var st *testenv.Stack
	if err := scope.Do(func(tb testing.TB) { st = testenv.StartStack(tb, testenv.StackOptions{}) }); err != nil {
		return fail("start servers", err)
	}
	defer testenv.StopSharedS3()
	c.say("ZooKeeper on %s, 3 bookies (%s)", st.ZK.Addr, strings.Join(st.BK.RunningBookies(), ", "))
	c.say("versitygw S3 server on %s, bucket %s", st.S3.Endpoint, st.Bucket)
	c.say("stock Pulsar 4.0.8 broker on %s (admin %s), its offloader (aws-s3) on the bucket", st.Broker.ServiceURL, st.Broker.WebURL)

	prod, err := st.Java.Produce(ctx, st.Broker, topic, testenv.ProduceOptions{Count: count, Seed: 8, Sizes: []int{1000, 10000, 30000, 4000}})
	if err != nil {
		return fail("produce", err)
	}
	c.say("produced %d messages (%s) with Pulsar's Java client into %d ledgers of %s", prod.Count, units.HumanBytes(prod.Bytes),
		len(prod.LedgerIDs()[-1]), topic)

	dir := scope.TempDir()
	var listen string
	if err := scope.Do(func(tb testing.TB) { listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(tb)) }); err != nil {
		return fail("status port", err)
	}
	cfgPath := filepath.Join(dir, "offloader.yaml")
	cfg := serviceConfig(st, listen)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return fail("config", err)
	}
	env := append(os.Environ(), secretEnv+"="+st.S3.SecretKey)
	fmt.Printf("\nthe service's policy (%s):\n%s\n", cfgPath, cfg[strings.Index(cfg, "policy:"):])

	fmt.Printf("$ offloader plan --config offloader.yaml --limit 5\n")
	plan := exec.CommandContext(ctx, bin, "plan", "--config", cfgPath, "--limit", "5")
	plan.Env = env
	out, err := plan.CombinedOutput()
	os.Stdout.Write(out)
	if err != nil {
		return fail("offloader plan", err)
	}

	serviceLog = filepath.Join(dir, "offloader-run.log")
	logf, err := os.Create(serviceLog)
	if err != nil {
		return fail("service log", err)
	}
	defer logf.Close()
	fmt.Printf("\n$ offloader run --config offloader.yaml --log-level info 2>%s &\n", serviceLog)
	svc := exec.Command(bin, "run", "--config", cfgPath, "--log-level", "info")
	svc.Env, svc.Stdout, svc.Stderr = env, logf, logf
	began := time.Now()
	if err := svc.Start(); err != nil {
		return fail("offloader run", err)
	}
	var exitErr error
	exited := make(chan struct{})
	go func() { exitErr = svc.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = svc.Process.Kill()
			<-exited
		}
	}()
	base := "http://" + listen
	if err := waitReady(ctx, base, exited); err != nil {
		return fail("offloader run", err)
	}
	tty := cli.IsTerminal(os.Stdout)
	var watch *exec.Cmd
	if tty {
		fmt.Printf("$ offloader status --service %s --watch 1s --all\n", base)
		watch = exec.Command(bin, "status", "--service", base, "--watch", "1s", "--all")
		watch.Stdout, watch.Stderr = os.Stdout, os.Stderr
		if err := watch.Start(); err != nil {
			return fail("offloader status --watch", err)
		}
	}
	final, err := waitCaughtUp(ctx, base, exited)
	if watch != nil {
		_ = watch.Process.Signal(os.Interrupt)
		_ = watch.Wait()
	}
	if err != nil {
		return fail("offloader run", err)
	}
	took := time.Since(began)
	if !tty {
		fmt.Printf("$ offloader status --service %s --all\n", base)
		show := exec.CommandContext(ctx, bin, "status", "--service", base, "--all")
		show.Stdout, show.Stderr = os.Stdout, os.Stderr
		if err := show.Run(); err != nil {
			return fail("offloader status", err)
		}
	}
	fmt.Println()
	c.say("backlog offloaded and trimmed by the service in %s (from its start)", took.Round(100*time.Millisecond))
	stopAt := time.Now()
	_ = svc.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if exitErr != nil {
			return fail("offloader run exit", exitErr)
		}
	case <-time.After(60 * time.Second):
		return fail("offloader run", errors.New("did not stop within 60s of SIGTERM"))
	}
	c.say("service stopped %s after SIGTERM", time.Since(stopAt).Round(time.Millisecond))

	read, err := st.Java.ReadAll(ctx, st.Broker, topic, testenv.ReadOptions{Expect: int(prod.Count)})
	if err != nil {
		return fail("read", err)
	}
	c.say("read %d messages back through the broker with a Reader from the earliest position", read.Count)
	stats, err := st.Broker.InternalStats(ctx, topic)
	if err != nil {
		return fail("internalStats", err)
	}
	offloaded := map[int64]bool{}
	for _, l := range stats.Ledgers {
		if l.Offloaded {
			offloaded[l.LedgerID] = true
		}
	}
	produced := map[string]string{}
	for _, m := range prod.Messages {
		produced[fmt.Sprintf("%d:%d", m.LedgerID, m.EntryID)] = m.SHA256
	}
	same, fromStore := 0, 0
	for _, m := range read.Messages {
		if produced[fmt.Sprintf("%d:%d", m.LedgerID, m.EntryID)] == m.SHA256 && m.SHA256 == digest(testenv.Payload(8, m.Index, m.Length)) {
			same++
			if offloaded[m.LedgerID] {
				fromStore++
			}
		}
	}
	d := final.Done
	fmt.Println()
	fmt.Println("report")
	fmt.Printf("  the service:    %d ledgers offloaded (%s, copy %s), %d trimmed (%s freed on BookKeeper), %d failed runs, in %s\n",
		d.OffloadedLedgers, units.HumanBytes(d.OffloadedBytes), copyRate(d), d.TrimmedLedgers, units.HumanBytes(d.FreedBytes),
		d.FailedLedgers, took.Round(100*time.Millisecond))
	fmt.Printf("  broker's view:  %d of %d ledgers served from the object store, the rest on BookKeeper (keep_bytes %s and the open ledger)\n",
		len(offloaded), len(stats.Ledgers), units.HumanBytes(keepBytes))
	fmt.Printf("  messages:       %d produced, %d read back with the same payload (SHA-256)\n", prod.Count, same)
	fmt.Printf("  wall time:      %s\n", time.Since(c.start).Round(time.Second))
	fmt.Printf("read back %d of %d messages through the stock broker, %d of them from the object store\n", same, prod.Count, fromStore)
	if int64(same) != prod.Count || fromStore == 0 {
		return 1
	}
	return 0
}

// waitCaughtUp polls the service's /status until the policy has nothing
// left to do: ready, something offloaded, no lag, no trim due, every
// offloaded ledger trimmed, nothing running, failing or parked, in two
// evaluations a second apart with nothing done in between; or the service
// exits, or waitBudget passes.
func waitCaughtUp(ctx context.Context, base string, exited <-chan struct{}) (*offloader.Status, error) {
	deadline := time.Now().Add(waitBudget)
	var quietSince time.Time
	var last *offloader.Status
	for {
		st, err := getStatus(ctx, base)
		switch {
		case err != nil:
			quietSince = time.Time{}
		case caughtUp(st):
			if quietSince.IsZero() || st.Done != last.Done {
				quietSince = st.EvaluatedAt
			}
			if st.EvaluatedAt.Sub(quietSince) >= time.Second {
				return st, nil
			}
		default:
			quietSince = time.Time{}
		}
		if err == nil {
			last = st
		}
		select {
		case <-exited:
			return nil, errors.New("exited before the backlog was offloaded")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			if last != nil {
				t := last.Totals
				err = fmt.Errorf("lag %s in %d ledgers, %d running, %d backing off, %d parked, last error %q", units.HumanBytes(t.LagBytes),
					t.LagLedgers, t.RunningLedgers, t.BackoffLedgers, t.ParkedLedgers, last.LastError)
			}
			return nil, fmt.Errorf("backlog not offloaded within %s: %v", waitBudget, err)
		}
	}
}

// waitReady polls /status until the service is ready (a session and a
// first full scan), at most a minute.
func waitReady(ctx context.Context, base string, exited <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := getStatus(ctx, base)
		if err == nil && st.Ready {
			return nil
		}
		if err == nil {
			err = errors.New("not ready: " + st.LastError)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within a minute: %w", err)
		}
		select {
		case <-exited:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func caughtUp(st *offloader.Status) bool {
	t, d := st.Totals, st.Done
	return st.Ready && d.OffloadedLedgers > 0 && d.TrimmedLedgers >= d.OffloadedLedgers && t.LagBytes == 0 && t.TrimBytes == 0 &&
		t.RunningLedgers == 0 && t.BackoffLedgers == 0 && t.ParkedLedgers == 0
}

func getStatus(ctx context.Context, base string) (*offloader.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /status: %s", resp.Status)
	}
	var st offloader.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("GET /status: %w", err)
	}
	return &st, nil
}

func copyRate(d offloader.Done) string {
	if d.CopySeconds <= 0 {
		return "-"
	}
	return units.DecimalRate(float64(d.CopiedBytes) / d.CopySeconds)
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
