package okpkg

import "testing"

func TestOK(t *testing.T)   { t.Log("hi") }
func TestSkip(t *testing.T) { t.Skip("meh") }
