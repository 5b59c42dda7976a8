package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type component struct {
	ops  *prometheus.CounterVec
	done prometheus.Counter
	busy prometheus.Gauge
	lat  *prometheus.HistogramVec
}

func newComponent(reg prometheus.Registerer) (*component, error) {
	f := New(reg, "test")
	c := &component{
		ops:  f.CounterVec("operations_total", "Operations.", Label{"op", []string{"get", "put"}}, Label{"result", []string{"ok", "error"}}),
		done: f.Counter("done_total", "Done."),
		busy: f.Gauge("busy", "Busy."),
		lat:  f.HistogramVec("duration_seconds", "Latency.", []float64{0.1, 1}, Label{"op", []string{"get", "put"}}),
	}
	return c, f.Err()
}

func TestTwoInstancesShareOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a, err := newComponent(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newComponent(reg) // promauto.With(reg) panics here
	if err != nil {
		t.Fatalf("second instance: %v", err)
	}
	a.ops.WithLabelValues("get", "ok").Inc()
	b.ops.WithLabelValues("get", "ok").Add(2)
	a.done.Inc()
	b.done.Inc()
	a.busy.Inc()
	b.busy.Inc()
	b.busy.Dec()
	if got := testutil.ToFloat64(a.ops.WithLabelValues("get", "ok")); got != 3 {
		t.Errorf("ops{get,ok} = %v, want 3 (both instances count)", got)
	}
	if got := testutil.ToFloat64(b.done); got != 2 {
		t.Errorf("done = %v, want 2", got)
	}
	if got := testutil.ToFloat64(a.busy); got != 1 {
		t.Errorf("busy = %v, want 1", got)
	}
	// Every label combination exists at zero before any event.
	if n := testutil.CollectAndCount(a.ops); n != 4 {
		t.Errorf("%d operation series, want 4 pre-created", n)
	}
	if n, err := testutil.GatherAndCount(reg, "tierkeeper_test_duration_seconds"); err != nil || n != 2 {
		t.Errorf("histogram series: %d, %v", n, err)
	}
	want := `
# HELP tierkeeper_test_done_total Done.
# TYPE tierkeeper_test_done_total counter
tierkeeper_test_done_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tierkeeper_test_done_total"); err != nil {
		t.Error(err)
	}
	if lint, err := testutil.GatherAndLint(reg); err != nil || len(lint) > 0 {
		t.Errorf("lint: %v %v", lint, err)
	}
}

func TestNilRegistererAndErrors(t *testing.T) {
	c, err := newComponent(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.done.Inc() // usable, just not registered
	if testutil.ToFloat64(c.done) != 1 {
		t.Error("unregistered counter does not count")
	}

	reg := prometheus.NewRegistry()
	f := New(reg, "test")
	f.Counter("x_total", "One help.")
	if f.Err() != nil {
		t.Fatal(f.Err())
	}
	g := New(reg, "test")
	if g.Counter("x_total", "Another help."); g.Err() == nil {
		t.Error("conflicting help accepted")
	}
	for _, bad := range []func(*Factory){
		func(f *Factory) { f.Counter("no_suffix", "c") },
		func(f *Factory) { f.Gauge("things_total", "g") },
		func(f *Factory) { f.Gauge("Bad-Name", "g") },
	} {
		f := New(prometheus.NewRegistry(), "test")
		if bad(f); f.Err() == nil {
			t.Error("bad name accepted")
		}
	}
	if New(nil, "Bad").Err() == nil {
		t.Error("bad component accepted")
	}
	if got := New(nil, "blob").Name("operations_total"); got != "tierkeeper_blob_operations_total" {
		t.Errorf("Name = %s", got)
	}
}

func TestRegisterCustomCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	c1 := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tierkeeper_test_up", Help: "Up."}, func() float64 { return 1 })
	c2 := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tierkeeper_test_up", Help: "Up."}, func() float64 { return 2 })
	if got, err := Register(reg, c1); err != nil || got != c1 {
		t.Fatal(err)
	}
	got, err := Register(reg, c2)
	if err != nil || got != c1 {
		t.Errorf("second registration: %v, %v; want the first collector back", got, err)
	}
}
