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
