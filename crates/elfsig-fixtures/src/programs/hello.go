// elfsig test program. The greeting is a constant string (read-only data) and the counter a
// package variable (writable data), so the output proves that both were loaded correctly.
package main

import (
	"fmt"
	"os"
)

const greeting = "hello from an elfsig Go fixture"

var counter = 41

func main() {
	counter++
	fmt.Fprintf(os.Stdout, "%s: counter=%d\n", greeting, counter)
}
