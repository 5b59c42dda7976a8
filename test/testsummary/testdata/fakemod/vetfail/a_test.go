package vetfail

import (
	"fmt"
	"testing"
)

func TestX(t *testing.T) { fmt.Printf("%d\n", "not a number") }
