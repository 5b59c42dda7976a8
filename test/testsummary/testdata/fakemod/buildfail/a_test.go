package buildfail

import "testing"

func TestX(t *testing.T) { undefinedThing() }
