package timeout

import (
	"testing"
	"time"
)

func TestSlow(t *testing.T) { time.Sleep(10 * time.Second) }
