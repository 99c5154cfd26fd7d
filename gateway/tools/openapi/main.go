// Command openapi writes the gateway's OpenAPI document (the one served at
// /openapi.json) to stdout or to the file named by -o, without starting
// anything: CI lints it and clients generate code from it. With
// -internal-dir it also writes each context's internal API document
// there, as <ctx>.json (nothing serves those: they are what
// api/released/internal holds and the breaking-change gate compares).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencrm/crm/gateway/internal/gateway"
)

func main() {
	out := flag.String("o", "", "write to this file instead of stdout")
	internalDir := flag.String("internal-dir", "", "also write each context's internal API document to this directory as <context>.json")
	flag.Parse()
	if err := run(*out, *internalDir); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run(out, internalDir string) error {
	doc, err := gateway.OpenAPI()
	if err != nil {
		return err
	}
	b, err := encode(doc)
	if err != nil {
		return err
	}
	if out == "" {
		if _, err = os.Stdout.Write(b); err != nil {
			return err
		}
	} else if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	if internalDir == "" {
		return nil
	}
	return writeInternal(internalDir)
}

// writeInternal writes every context's internal document into dir,
// created if need be. A file of a context that no longer serves an
// internal API is left alone: removing it is a decision of the release
// that removes that API, not of this command.
func writeInternal(dir string) error {
	docs, err := gateway.InternalOpenAPI()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for service, doc := range docs {
		b, err := encode(doc)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, service+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func encode(doc any) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
