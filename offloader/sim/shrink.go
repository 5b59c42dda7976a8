package sim

// Shrink looks for a shorter run that breaks the same invariant as res
// (the run of cfg): it replays res's decisions with chunks of them left
// out (delta debugging: halves, then quarters, ... down to single
// decisions), keeping every replay that still breaks the invariant, and
// then tries the same schedule with fewer replicas and without the CLI.
// run executes one Config (inside a synctest bubble); budget bounds the
// replays. It returns the shortest run found (res itself if none).
func Shrink(run func(Config) *Result, cfg Config, res *Result, budget int) *Result {
	if res.Violation == nil {
		return res
	}
	inv := res.Violation.Invariant
	best := res
	try := func(c Config, script []Decision) bool {
		if budget <= 0 {
			return false
		}
		budget--
		c.Script = append([]Decision(nil), script...)
		r := run(c)
		if r.Violation == nil || r.Violation.Invariant != inv || len(r.Decisions) > len(best.Decisions) {
			return false
		}
		best = r
		return true
	}
	if !try(cfg, res.Decisions) {
		return res // not reproducible by replay
	}
	for _, smaller := range []func(Config) (Config, bool){
		func(c Config) (Config, bool) { c.CLI = false; return c, cfg.CLI },
		func(c Config) (Config, bool) { c.Replicas--; return c, c.Replicas >= 0 },
		func(c Config) (Config, bool) { c.Replicas--; return c, c.Replicas >= 0 },
	} {
		if c, ok := smaller(cfg); ok && try(c, best.Decisions) {
			cfg = c
		}
	}
	n := 2
	for budget > 0 {
		script := best.Decisions
		if len(script) < 2 {
			break
		}
		chunk := (len(script) + n - 1) / n
		reduced := false
		for start := 0; start < len(script) && budget > 0; start += chunk {
			end := min(start+chunk, len(script))
			cand := append(append([]Decision(nil), script[:start]...), script[end:]...)
			if try(cfg, cand) {
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(script))
		}
	}
	best.Config = cfg
	return best
}
