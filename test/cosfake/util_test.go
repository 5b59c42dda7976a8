package cosfake

import "regexp"

func regexpMatch(re, s string) (bool, error) { return regexp.MatchString(re, s) }
