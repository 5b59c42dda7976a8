package testpanic

import "testing"

func TestOK(t *testing.T) {}
func TestP(t *testing.T)  { t.Run("sub", func(t *testing.T) { panic("boom") }) }
