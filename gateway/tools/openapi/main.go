// Command openapi writes the gateway's OpenAPI document (the one served at
// /openapi.json) to stdout or to the file named by -o, without starting
// anything: CI lints it and clients generate code from it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/opencrm/crm/gateway/internal/gateway"
)

func main() {
	out := flag.String("o", "", "write to this file instead of stdout")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	doc, err := gateway.OpenAPI()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
