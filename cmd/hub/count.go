package main

import (
	"strconv"

	"github.com/a6afc2ce/hermes-hub/admin"
)

// countFlag is a flag holding a whole number within a range: the hub is
// never asked for more than it serves, and a wrong value is refused before
// anything is opened, with the accepted range.
type countFlag struct {
	name   string
	lo, hi int
	n      int
}

func (c *countFlag) String() string {
	if c == nil {
		return ""
	}
	return strconv.Itoa(c.n)
}

func (c *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < c.lo || n > c.hi {
		return countError{admin.CountError(c.name, c.lo, c.hi)}
	}
	c.n = n
	return nil
}

type countError struct{ msg string }

func (e countError) Error() string { return e.msg }

// count defines a count flag with a default and a range.
func (f *flagSet) count(name string, def, lo, hi int, usage string) *int {
	c := &countFlag{name: name, lo: lo, hi: hi, n: def}
	f.Var(c, name, usage+" ("+strconv.Itoa(lo)+" to "+strconv.Itoa(hi)+")")
	return &c.n
}
