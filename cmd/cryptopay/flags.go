package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

// Environment variables the CLI reads.
const (
	envAPIKey        = "CRYPTOPAY_API_KEY"
	envBaseURL       = "CRYPTOPAY_BASE_URL"
	envWebhookSecret = "CRYPTOPAY_WEBHOOK_SECRET"
)

// maxSecretFile caps a key or secret file: a key is a short line.
const maxSecretFile = 4 << 10

func (g *globalFlags) register(fs *flag.FlagSet) {
	g.registerAPI(fs)
	g.registerOutput(fs)
}

// registerAPI registers the flags that configure the API client.
func (g *globalFlags) registerAPI(fs *flag.FlagSet) {
	fs.StringVar(&g.baseURL, "base-url", g.baseURL, "API base `URL` (default $"+envBaseURL+")")
	fs.StringVar(&g.apiKeyFile, "api-key-file", g.apiKeyFile, "read the API key from `path` (default: $"+envAPIKey+")")
	fs.DurationVar(&g.requestTimeout, "request-timeout", g.requestTimeout, "timeout of each HTTP attempt (default 30s)")
}

// registerOutput registers --output alone, for commands that never call
// the API.
func (g *globalFlags) registerOutput(fs *flag.FlagSet) {
	fs.StringVar(&g.output, "output", g.output, "output `format`: table, json, csv or jsonl, those the command writes (its\n"+
		"Output line above; default: table on a terminal where the command writes one)")
}

// The output formats: every command's --output takes its value among
// these, and writes those of them its cmdFlags.formats list.
const (
	outTable = "table" // aligned columns for a person
	outJSON  = "json"  // one JSON document, amounts as exact decimal strings
	outCSV   = "csv"   // one header and a row per item
	outJSONL = "jsonl" // a JSON object a line, written as the items come
)

// outputFormats is the vocabulary of --output.
var outputFormats = []string{outTable, outJSON, outCSV, outJSONL}

// The shared flag sets. Every flag of the CLI's common vocabulary is
// registered by one of them, never by a command itself
// (TestCommandFlagsComeFromSharedSets walks every command).
const (
	setAPI      = "api"      // --base-url, --api-key-file, --request-timeout
	setOutput   = "output"   // --output
	setDatabase = "database" // --database-url and the stores' table flags
	setPage     = "page"     // --page-size
	setCSV      = "csv"      // --spreadsheet-safe
)

// removedFlags are spellings the CLI had before its one vocabulary, each
// with what replaces it: given one, a command says so (exit 64).
var removedFlags = map[string]string{
	"json":   "--output json",
	"csv":    "--output csv",
	"format": "--output csv or --output jsonl",
}

// shared registers the flags of a shared set with register, and records
// them as that set's.
func (fs *cmdFlags) shared(set string, register func(*flag.FlagSet)) {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	register(fs.FlagSet)
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			fs.sets[f.Name] = set
		}
	})
}

// writes sets the output formats the command writes (see formats); a
// command that writes csv takes --spreadsheet-safe.
func (a *app) writes(fs *cmdFlags, formats ...string) {
	fs.formats = formats
	if slices.Contains(formats, outCSV) {
		fs.shared(setCSV, func(f *flag.FlagSet) {
			f.BoolVar(&a.csvSafe, "spreadsheet-safe", false, "CSV only: prefix a ' to cells starting with = + - @, tab or CR so a spreadsheet\n"+
				"does not run them as formulas (a signed exact decimal stays a number; changes the data)")
		})
	}
}

// pageSize registers --page-size: how many items each list request to the
// API asks for.
func (a *app) pageSize(fs *cmdFlags) *int {
	var n int
	fs.shared(setPage, func(f *flag.FlagSet) {
		f.IntVar(&n, "page-size", 100, "payouts per list request to the API")
	})
	return &n
}

// newFlagSet returns a FlagSet for cmd with the global flags registered.
// The flag package prints nothing: errors are returned, --help is printed
// to stdout by parse.
func (a *app) newFlagSet(cmd command) *cmdFlags {
	fs := bareFlagSet(cmd)
	fs.shared(setAPI, a.global.registerAPI)
	fs.shared(setOutput, a.global.registerOutput)
	return fs
}

func bareFlagSet(cmd command) *cmdFlags {
	fs := flag.NewFlagSet("cryptopay "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, cmd: cmd, formats: []string{outJSON, outTable}, sets: map[string]string{}}
}

func (a *app) printUsage(fs *cmdFlags) {
	fmt.Fprintf(a.stdout, "Usage: cryptopay %s [flags] %s\n\n%s\n\n", fs.cmd.name, fs.cmd.args, fs.cmd.summary)
	if fs.dbOnly {
		fmt.Fprintf(a.stdout, "%s\n\n", dbOnlyNote)
	}
	fmt.Fprintf(a.stdout, "Output (--output): %s; default %s on a terminal, %s otherwise.\n\n",
		strings.Join(fs.formats, ", "), fs.defaultOutput(true), fs.defaultOutput(false))
	fmt.Fprintln(a.stdout, "Flags:")
	fs.SetOutput(a.stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// defaultOutput is the format written when --output is not given.
func (fs *cmdFlags) defaultOutput(terminal bool) string {
	if terminal && slices.Contains(fs.formats, outTable) {
		return outTable
	}
	return fs.formats[0]
}

// parse parses args with flags anywhere among the positional arguments
// (everything after "--" is positional), settles the output format and
// checks the number of positional arguments.
func (a *app) parse(fs *cmdFlags, args []string, minArgs, maxArgs int) ([]string, error) {
	if a.seenFlags != nil {
		a.seenFlags(fs)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				a.printUsage(fs)
				return nil, quietExit(exitOK)
			}
			if refused := flagRefused(fs, err); refused != nil {
				return nil, refused
			}
			return nil, usageErr("%s: %v (see 'cryptopay %s --help')", fs.cmd.name, err, fs.cmd.name)
		}
		consumed := len(args) - fs.NArg()
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, fs.Args()...)
			break
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := a.settleOutput(fs); err != nil {
		return nil, err
	}
	if len(pos) < minArgs || len(pos) > maxArgs {
		want := fmt.Sprintf("%d", minArgs)
		if maxArgs != minArgs {
			want = fmt.Sprintf("%d to %d", minArgs, maxArgs)
		}
		return nil, usageErr("%s: want %s argument(s), got %d (see 'cryptopay %s --help')", fs.cmd.name, want, len(pos), fs.cmd.name)
	}
	return pos, nil
}

// settleOutput sets a.format from --output, or the command's default;
// a format the command does not write is a usage error (exit 64).
func (a *app) settleOutput(fs *cmdFlags) error {
	o := a.global.output
	if o == "" {
		o = fs.defaultOutput(a.isTerminal(a.stdout))
	}
	if !slices.Contains(fs.formats, o) {
		return usageErr("%s: --output %q: want %s", fs.cmd.name, o, strings.Join(fs.formats, ", "))
	}
	a.format = o
	return nil
}

// checkOutputWord refuses, before any command runs, an --output value
// that is no format at all.
func checkOutputWord(o string) error {
	if o != "" && !slices.Contains(outputFormats, o) {
		return usageErr("--output %q: want %s", o, strings.Join(outputFormats, ", "))
	}
	return nil
}

// parseOutput is parse, with whether the command prints JSON.
func (a *app) parseOutput(fs *cmdFlags, args []string, minArgs, maxArgs int) ([]string, bool, error) {
	pos, err := a.parse(fs, args, minArgs, maxArgs)
	return pos, a.format == outJSON, err
}

// client builds the API client from the flags and the environment.
func (a *app) client() (*cryptopay.Client, error) {
	base := a.global.baseURL
	if base == "" {
		base = a.getenv(envBaseURL)
	}
	if base == "" {
		return nil, usageErr("no API base URL: set %s or pass --base-url", envBaseURL)
	}
	if err := checkBaseURL(base); err != nil {
		return nil, err
	}
	key, err := a.secret(a.global.apiKeyFile, envAPIKey, "API key", "--api-key-file")
	if err != nil {
		return nil, err
	}
	timeout := a.global.requestTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	opts := append([]cryptopay.Option{cryptopay.WithHeader("User-Agent", "cryptopay-cli/1"), cryptopay.WithTimeout(timeout)}, a.clientOpts...)
	c, err := cryptopay.NewClient(base, string(key), opts...)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return c, nil
}

// secret reads a key from file (when given) or from the environment
// variable env. A file's surrounding white space (a final newline) is
// dropped. The value never appears in an error.
func (a *app) secret(file, env, what, flagName string) ([]byte, error) {
	if file == "" {
		v := strings.TrimSpace(a.getenv(env))
		if v == "" {
			return nil, usageErr("no %s: set %s or pass %s", what, env, flagName)
		}
		a.secrets = append(a.secrets, v)
		return []byte(v), nil
	}
	shown := file
	if looksLikeKey(file) {
		shown = "(argument not shown: it looks like a key or secret, not a file name; give the path of a file holding it)"
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, usageErr("%s %s: %v", flagName, shown, errors.Unwrap(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, usageErr("%s %s: %v", flagName, shown, err)
	}
	if len(b) > maxSecretFile {
		return nil, usageErr("%s %s: larger than %d bytes; want the %s alone", flagName, shown, maxSecretFile, what)
	}
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) == 0 {
		return nil, usageErr("%s %s: the file is empty", flagName, shown)
	}
	a.secrets = append(a.secrets, string(b))
	return b, nil
}

// isTerminal reports whether v is an *os.File open on a character device
// other than the null device: a terminal, in practice. (Another character
// device would only make the CLI more talkative, or read a confirmation
// that is not "yes" and refuse.)
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// decimalValue is a flag holding an exact decimal amount, written as a
// plain decimal (see parseAmount).
type decimalValue struct {
	d   *decimal.Decimal
	set bool
}

func (v *decimalValue) String() string {
	if v == nil || v.d == nil || !v.set {
		return ""
	}
	return v.d.String()
}

func (v *decimalValue) Set(s string) error {
	d, err := parseAmount(s)
	if err != nil {
		return err
	}
	*v.d, v.set = d, true
	return nil
}

// keyOnArgv refuses an API key or webhook secret given as a flag value:
// ps and shell history would show it. The value is never echoed.
func keyOnArgv(args []string) string {
	for _, arg := range args {
		if arg == "--" {
			return ""
		}
		name := strings.TrimLeft(arg, "-")
		if name == arg {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		switch name {
		case "api-key", "apikey", "key":
			return "the API key is not accepted on the command line (ps shows it); set CRYPTOPAY_API_KEY or use --api-key-file"
		case "secret", "webhook-secret":
			return "the webhook secret is not accepted on the command line (ps shows it); set CRYPTOPAY_WEBHOOK_SECRET or use --secret-file"
		}
	}
	return ""
}

// checkBaseURL refuses a plain http base URL to a host that is not
// loopback, which would send the API key in clear, in words a CLI user can
// act on (the SDK's own message names a Go option).
func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
		return nil // NewClient judges everything else
	}
	return usageErr("base URL %q: plain http to a host that is not loopback would send the API key in clear; use its https:// URL (the CLI does not send the key over plain http)", u.Redacted())
}

// isLoopback reports whether host (without port) is localhost or a
// loopback address.
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())
}

// looksLikeKey reports whether a file argument may be a key (or a base64
// secret) pasted in its place: 16 or more characters of the key and base64
// alphabets, at least one a digit, and no dot. Such an argument is never
// printed; a path it hides by mistake costs a less helpful message only.
func looksLikeKey(arg string) bool {
	if len(arg) < 16 || !strings.ContainsAny(arg, "0123456789") {
		return false
	}
	return !strings.ContainsFunc(arg, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-+/=", r))
	})
}

// apiFlags are the global flags that configure the API client. A command
// that works on the database alone refuses them after its name (given
// before the command, as global flags, they are accepted by every command).
var apiFlags = []string{"base-url", "api-key-file", "request-timeout"}

// dbOnlyNote ends the help of a command that works on the database alone.
const dbOnlyNote = "Works on the database alone and never calls the API: it takes the database flags\n" +
	"and --output, not --base-url, --api-key-file or --request-timeout."

// flagRefused is the usage error for an API flag given to a command that
// works on the database alone, or for a removed spelling (removedFlags),
// or nil when err is another.
func flagRefused(fs *cmdFlags, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	switch {
	case !ok:
		return nil
	case removedFlags[name] != "":
		return usageErr("%s: --%s is no longer a flag: use %s (see 'cryptopay %s --help')", fs.cmd.name, name, removedFlags[name], fs.cmd.name)
	case !fs.dbOnly || !slices.Contains(apiFlags, name):
		return nil
	}
	return usageErr("%s: --%s is not a flag of this command: it works on the database alone and never calls the API (see 'cryptopay %s --help')",
		fs.cmd.name, name, fs.cmd.name)
}

// objectFlags are the fields payment create and payout create share.
type objectFlags struct {
	amount                     decimal.Decimal
	currency, network          string
	customerID, customerIP     string
	orderID                    string
	additionalData, webhookURL string
	feeByUser                  bool
}

// register defines the shared flags; payout marks those a payout requires
// and a payment does not (CreatePayoutParams.Validate: the network picks
// the wallet address's check). Both require the orderId: it reconciles an
// unknown outcome.
func (o *objectFlags) register(fs *flag.FlagSet, feeUsage string, payout bool) {
	payoutRequired := ""
	if payout {
		payoutRequired = " (required)"
	}
	fs.Var(&decimalValue{d: &o.amount}, "amount", "amount in the currency, an exact `decimal` such as 10.5 (required)")
	fs.StringVar(&o.currency, "currency", "", "currency `key`, for example usdt (required)")
	fs.StringVar(&o.network, "network", "", "network `key`, for example tron"+payoutRequired)
	fs.StringVar(&o.customerID, "customer-id", "", "your customer's `id` (required)")
	fs.StringVar(&o.customerIP, "customer-ip", "", "your customer's IP `address` (required)")
	fs.StringVar(&o.orderID, "order-id", "", "your order `id`; unique per order (it is how an unknown outcome is reconciled) (required)")
	fs.StringVar(&o.additionalData, "additional-data", "", "free-form `text` stored with the object")
	fs.StringVar(&o.webhookURL, "webhook-url", "", "where events are sent; build it with 'cryptopay webhook url'")
	fs.BoolVar(&o.feeByUser, "fee-by-user", false, feeUsage)
}
