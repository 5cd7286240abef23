// Command freqlens trains, evaluates, inspects and applies FreqLens
// forecasting models, and runs the streaming service.
//
//	freqlens train   (--data FILE | --from-topic --config FILE) --horizon H --out MODEL [--json]
//	freqlens eval    --model MODEL --data FILE [--config FILE] [--json]
//	freqlens inspect --model MODEL [--data FILE [--config FILE]] [--json]
//	freqlens predict --model MODEL --data CSV --at ROW [--without 24h] [--json]
//	freqlens report  --model MODEL [--data CSV] [--at ROW] [--channel COL] --out DIR
//	freqlens serve   --config FILE [--embedded-broker ADDR] [--metrics-addr ADDR] [--log-level info]
//	freqlens demo    [--series 20] [--rate 10] [--duration 0] [--model MODEL]
//	freqlens replay  --data CSV (--brokers ADDR --topic T | --config FILE)
//	freqlens backtest --model MODEL (--data FILE | --from-topic --config FILE) [--json]
//	freqlens version
//
// The commands are flags and printing around the packages: serve and demo
// build a service.Config and run package service, demo with package feed's
// simulated sensors producing to it, and replay runs a feed.Replay. cmd
// imports none of stream, sink, window and online (internal/structure
// checks it). Every error is one line on stderr and exit status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `freqlens: interpretable frequency-attribution forecasting

usage:
  freqlens demo    [--series 20] [--rate 10] [--duration 0] [--model MODEL] [--seed 7] [--embedded-broker 127.0.0.1:0]    the streaming demo, nothing to install
  freqlens train   (--data FILE [--config FILE] | --from-topic --config FILE [--since 14d]) --horizon H --out MODEL [--lookback 96] [--epochs 50] [--seed 42] [--mode mixed|independent] [--max-windows 100000] [--json]   (wide CSV; long CSV, Arrow or Parquet; the topic)
  freqlens eval    --model MODEL --data FILE [--config FILE] [--json]   (wide CSV, or long-format as train reads it)
  freqlens inspect --model MODEL [--data FILE [--config FILE]] [--json]
  freqlens predict --model MODEL --data CSV --at ROW [--without 24h] [--json]   one forecast explained, and without a cycle (long-format data: --series ID --at TIME)
  freqlens report  --model MODEL [--data CSV] [--at ROW] [--channel COL] --out DIR   figures and an HTML page (long-format data: --series ID [--at TIME])
  freqlens serve   --config FILE [--embedded-broker ADDR] [--metrics-addr ADDR] [--log-level info]   the streaming service
  freqlens replay  --data CSV (--brokers ADDR --topic T | --config FILE) [--speed max|60x]   a CSV as readings
  freqlens backtest --model MODEL (--data FILE | --from-topic --config FILE) [--config FILE] [--from TIME] [--since SPAN] [--fine-tune=false] [--intervals 0.8,0.95] [--every 24h] [--focus SERIES] [--workers N] [--report DIR] [--json]   the serving path over history: intervals, fine-tuning and drift scored
  freqlens version  the build: module version, commit, Go version, and the model file format it reads

Run 'freqlens COMMAND -h' for the flags of a command.
`

// command is one subcommand: it parses its own flags from args.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"train":    runTrain,
	"eval":     runEval,
	"inspect":  runInspect,
	"predict":  runPredict,
	"report":   runReport,
	"serve":    runServe,
	"replay":   runReplay,
	"backtest": runBacktest,
	"demo":     runDemo,
	"version":  runVersion,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "freqlens: unknown command %q; run 'freqlens help' for the list\n", args[0])
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2 // the flag package has printed the problem and the flags
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "freqlens %s: interrupted\n", args[0])
		return 130
	}
	// A package named like the command (report) prefixes its errors with
	// its name; the command's own prefix says it already.
	fmt.Fprintf(stderr, "freqlens %s: %v\n", args[0], strings.TrimPrefix(oneLine(err), args[0]+": "))
	return 2
}

// errUsage reports a flag error the flag package has already printed.
var errUsage = errors.New("usage")

// parseFlags parses args into fs, turning flag errors into errUsage and
// rejecting stray arguments.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "freqlens %s: unexpected argument %q (flags start with --)\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

// require reports the first flag in names that was left out, or given
// empty or 0.
func require(fs *flag.FlagSet, names ...string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil || (f.Value.String() != "" && f.Value.String() != "0") {
			continue
		}
		if given[n] {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case int, int64, uint, uint64, float64:
					return fmt.Errorf("--%s 0: use a positive number (%s)", n, f.Usage)
				}
			}
			return fmt.Errorf("--%s %q: give it a value (%s)", n, f.Value.String(), f.Usage)
		}
		return fmt.Errorf("--%s is required (%s)", n, f.Usage)
	}
	return nil
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	b := []byte(err.Error())
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
