package main

// The time zones schedules name load on every machine, one without the
// system's zone database too (the container image is FROM scratch): the
// database is built into the binary, and used when the system has none.
import _ "time/tzdata"
