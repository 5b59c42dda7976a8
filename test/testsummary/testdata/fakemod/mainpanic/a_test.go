package mainpanic

import "testing"

func TestMain(m *testing.M) { panic("boom in TestMain") }
func TestX(t *testing.T)    {}
