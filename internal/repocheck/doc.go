// Package repocheck holds tests of the repository as a whole: that the
// comments and documents cite only files the repository has (docs/design.md
// and its numbered invariants, not documents a reader cannot open), and
// that the offloader's build stays apart from the bookie agent's benchmark
// and rule code (docs/design.md, "Architecture"). It has no code of its own.
package repocheck
