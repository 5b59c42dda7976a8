package osexit

import (
	"os"
	"testing"
)

func TestOK(t *testing.T) {}

func TestExit(t *testing.T) {
	t.Log("about to exit")
	os.Exit(1)
}
