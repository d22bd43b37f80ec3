// Command fakesvc runs the fake payment service on a fixed address, for trying example
// workflows by hand (see scripts/payments/README.md). On interrupt it prints every
// request it received and how many times each idempotency key was applied.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/scripthost/scripthost/internal/fakesvc"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "address to listen on")
	behavior := flag.String("behavior", string(fakesvc.Succeed), "how mutations are answered: succeed, fail_4xx, fail_5xx, apply_timeout, apply_drop, unauthorized, forbidden, key_reused")
	dedupe := flag.Bool("dedupe", false, "keep Idempotency-Keys: answer a repeated key with the stored answer, 409 while under way, 422 on reuse")
	flag.Parse()
	s, err := fakesvc.Listen(*addr)
	if err != nil {
		log.Fatal(err)
	}
	s.SetDefault(fakesvc.Behavior(*behavior))
	s.SetDedupe(*dedupe)
	fmt.Fprintf(os.Stderr, "fakesvc: listening on %s (mutations: %s); interrupt to stop\n", s.URL(), *behavior)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	s.Close()
	seen := map[string]bool{}
	var keys []string
	for _, r := range s.Requests() {
		fmt.Fprintf(os.Stderr, "%s %s %s\n", r.Method, r.Path, r.Query)
		if k := r.Header.Get("Idempotency-Key"); k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(os.Stderr, "%s applied %d time(s)\n", k, s.Applies(k))
	}
	fmt.Fprintf(os.Stderr, "fakesvc: %d applies in total\n", s.Total())
}
