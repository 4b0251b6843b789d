package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagHint rewrites a flag parsing error of command c for people: an
// unknown flag names the near ones (cobra's own suggestion rule for
// commands, SuggestionsMinimumDistance, applied to flag names), a value of
// the wrong kind says what kind is wanted, and both point to --help.
func flagHint(c *cobra.Command, err error) error {
	msg := err.Error()
	help := fmt.Sprintf("run %q for its flags", c.CommandPath()+" --help")
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if near := nearFlags(c, name); len(near) > 0 {
			return fmt.Errorf("unknown flag --%s: did you mean %s? (%s)", name, strings.Join(near, " or "), help)
		}
		return fmt.Errorf("unknown flag --%s (%s)", name, help)
	}
	if strings.HasPrefix(msg, "unknown shorthand flag") {
		return fmt.Errorf("%s (%s)", msg, help)
	}
	if m := badValue.FindStringSubmatch(msg); m != nil {
		name := m[2]
		if i := strings.LastIndex(name, "--"); i >= 0 {
			name = name[i+2:]
		}
		if f := c.Flags().Lookup(name); f != nil {
			if want := wantedFormat(f); want != "" {
				return fmt.Errorf("--%s %s: %s (%s)", name, m[1], want, help)
			}
		}
	}
	return err
}

// badValue matches pflag's `invalid argument "abc" for "--max-turns" flag`.
var badValue = regexp.MustCompile(`^invalid argument "(.*)" for "([^"]+)" flag`)

// wantedFormat says what a flag of f's kind takes.
func wantedFormat(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "duration":
		return "want a duration with a unit, like 30s, 5m or 1h30m"
	case "int", "int64", "int32", "uint", "uint64":
		return "want a whole number, like --" + f.Name + " " + exampleInt(f)
	case "float64", "float32":
		return "want a number, like --" + f.Name + " 0.50"
	case "bool":
		return "want true or false (or the flag alone for true)"
	}
	return ""
}

func exampleInt(f *pflag.Flag) string {
	if f.DefValue != "" && f.DefValue != "0" {
		return f.DefValue
	}
	return "10"
}

// nearFlags returns the flags of c (and the persistent ones it inherits)
// whose names are near name, as "--name".
func nearFlags(c *cobra.Command, name string) []string {
	probe := &cobra.Command{Use: "probe", SuggestionsMinimumDistance: 2}
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			probe.AddCommand(&cobra.Command{Use: f.Name, Run: func(*cobra.Command, []string) {}})
		}
	}
	c.Flags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	var out []string
	for _, s := range probe.SuggestionsFor(name) {
		out = append(out, "--"+s)
	}
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}
