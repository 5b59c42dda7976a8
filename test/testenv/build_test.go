package testenv

import "testing"

func TestEnvInts(t *testing.T) {
	t.Setenv("TK_TEST_ENVINTS", "")
	if got := EnvInts(t, "TK_TEST_ENVINTS", []int{7}); len(got) != 1 || got[0] != 7 {
		t.Fatalf("unset: %v", got)
	}
	t.Setenv("TK_TEST_ENVINTS", " 5, 8,64 ")
	if got := EnvInts(t, "TK_TEST_ENVINTS", []int{7}); len(got) != 3 || got[0] != 5 || got[1] != 8 || got[2] != 64 {
		t.Fatalf("5,8,64: %v", got)
	}
}

func TestEnvBool(t *testing.T) {
	for _, c := range []struct {
		v         string
		def, want bool
	}{{"", true, true}, {"", false, false}, {"0", true, false}, {"1", false, true}, {" false ", true, false}, {"true", false, true}} {
		t.Setenv("TK_TEST_ENVBOOL", c.v)
		if got := EnvBool(t, "TK_TEST_ENVBOOL", c.def); got != c.want {
			t.Errorf("%q (default %v): %v, want %v", c.v, c.def, got, c.want)
		}
	}
}
