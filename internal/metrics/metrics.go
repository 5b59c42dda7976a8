// Package metrics is tierkeeper's one way to create and register
// Prometheus metrics:
//
//   - every name is tierkeeper_<component>_<name>, in base units (seconds,
//     bytes), counters ending in _total;
//   - every label value a metric can take is created up front, so series
//     exist (at zero) before the first event and rate() works from the
//     first scrape;
//   - registering on a registerer that already holds the same metric
//     (a second blob store, bookie client or uploader on one registry)
//     reuses the registered collector instead of failing or panicking:
//     the instances then count into the same series. Counters, histograms
//     and gauges moved with Inc/Dec/Add add up across instances; a gauge
//     each instance Sets to its own figure is overwritten by the last one,
//     so instances with such gauges need distinguishing labels.
//
// Constructors take a prometheus.Registerer in an option named Registerer;
// nil means "do not register" (the metrics still work, nobody scrapes
// them). To tell instances apart on one registry, wrap the registerer
// (prometheus.WrapRegistererWith) with a distinguishing constant label.
package metrics

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace is the first part of every tierkeeper metric name.
const Namespace = "tierkeeper"

// Register registers c on reg and returns it. When reg already holds an
// equal collector (same names, help and labels), it returns that one
// instead, so a second instance of a component shares the first one's
// series. A nil reg registers nothing and returns c. Other registration
// errors (a metric of the same name with other labels or help) are
// returned with c.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
		return c, fmt.Errorf("metrics: %w (registered as %T)", err, are.ExistingCollector)
	}
	return c, fmt.Errorf("metrics: %w", err)
}

// Label is a label name and every value it takes; the metric's series for
// all combinations of values are created at zero.
type Label struct {
	Name   string
	Values []string
}

// Factory creates one component's metrics and registers (or reuses) them.
// It is meant for constructors, not for concurrent use. The first error
// (bad name, conflicting registration) is kept in Err; the metrics are
// still usable, unregistered.
type Factory struct {
	reg       prometheus.Registerer
	component string
	err       error
}

var componentRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// New returns a Factory for component (lower case, e.g. "blob",
// "bookkeeper"), registering on reg (nil: not registered).
func New(reg prometheus.Registerer, component string) *Factory {
	f := &Factory{reg: reg, component: component}
	if !componentRE.MatchString(component) {
		f.fail(fmt.Errorf("metrics: component %q is not lower_snake_case", component))
	}
	return f
}

// Name returns the full metric name tierkeeper_<component>_<name>, for
// descriptors of collectors built by hand (const metrics at scrape time).
func Name(component, name string) string {
	return Namespace + "_" + component + "_" + name
}

// Name returns the full metric name tierkeeper_<component>_<name>.
func (f *Factory) Name(name string) string { return Name(f.component, name) }

// Err returns the first error met, or nil.
func (f *Factory) Err() error { return f.err }

func (f *Factory) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

func (f *Factory) check(name string, counter bool) {
	if !componentRE.MatchString(name) {
		f.fail(fmt.Errorf("metrics: %s: name is not lower_snake_case", f.Name(name)))
	}
	if counter != strings.HasSuffix(name, "_total") {
		f.fail(fmt.Errorf("metrics: %s: counters, and only counters, end in _total", f.Name(name)))
	}
}

// Register registers (or reuses) a collector built elsewhere, e.g. a
// const-metric collector whose descriptors use f.Name.
func (f *Factory) Register(c prometheus.Collector) prometheus.Collector {
	got, err := Register(f.reg, c)
	if err != nil {
		f.fail(err)
	}
	return got
}

func register[C prometheus.Collector](f *Factory, c C) C {
	got, err := Register(f.reg, c)
	if err != nil {
		f.fail(err)
	}
	return got
}

// Counter creates a counter tierkeeper_<component>_<name> (name ends in
// _total).
func (f *Factory) Counter(name, help string) prometheus.Counter {
	f.check(name, true)
	return register(f, prometheus.NewCounter(prometheus.CounterOpts{Name: f.Name(name), Help: help}))
}

// CounterVec creates a counter with labels, every combination of the
// labels' values created at zero.
func (f *Factory) CounterVec(name, help string, labels ...Label) *prometheus.CounterVec {
	f.check(name, true)
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name(name), Help: help}, names(labels))
	each(labels, func(vals []string) { v.WithLabelValues(vals...) })
	return register(f, v)
}

// Gauge creates a gauge.
func (f *Factory) Gauge(name, help string) prometheus.Gauge {
	f.check(name, false)
	return register(f, prometheus.NewGauge(prometheus.GaugeOpts{Name: f.Name(name), Help: help}))
}

// GaugeVec creates a gauge with labels, every combination created at zero.
func (f *Factory) GaugeVec(name, help string, labels ...Label) *prometheus.GaugeVec {
	f.check(name, false)
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name(name), Help: help}, names(labels))
	each(labels, func(vals []string) { v.WithLabelValues(vals...) })
	return register(f, v)
}

// Histogram creates a histogram with the given bucket upper bounds.
func (f *Factory) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	f.check(name, false)
	return register(f, prometheus.NewHistogram(prometheus.HistogramOpts{Name: f.Name(name), Help: help, Buckets: buckets}))
}

// HistogramVec creates a histogram with labels, every combination created.
func (f *Factory) HistogramVec(name, help string, buckets []float64, labels ...Label) *prometheus.HistogramVec {
	f.check(name, false)
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.Name(name), Help: help, Buckets: buckets}, names(labels))
	each(labels, func(vals []string) { v.WithLabelValues(vals...) })
	return register(f, v)
}

func names(labels []Label) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = l.Name
	}
	return out
}

// each calls fn with every combination of the labels' values.
func each(labels []Label, fn func([]string)) {
	vals := make([]string, len(labels))
	var rec func(i int)
	rec = func(i int) {
		if i == len(labels) {
			fn(vals)
			return
		}
		for _, v := range labels[i].Values {
			vals[i] = v
			rec(i + 1)
		}
	}
	rec(0)
}
