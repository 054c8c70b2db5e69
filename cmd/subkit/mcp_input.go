package main

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argumentErrors rewrites the tool errors that the MCP SDK makes of arguments that do not fit
// a tool's input (a schema violation, a number too large for the field) so that they name the
// argument and say what is wrong with it, in the words of every other refusal, instead of the
// validator's or Go's JSON decoder's text (a Go type's name means nothing to a client).
func argumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" || err != nil {
			return res, err
		}
		r, ok := res.(*mcp.CallToolResult)
		if !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			if msg, ok := argumentError(tc.Text); ok {
				tc.Text = msg
			}
		}
		return res, err
	}
}

var (
	// Go's JSON decoder: json: cannot unmarshal number 1e+30 into Go struct field main.bashIn.timeout_ms of type int64
	goFieldError = regexp.MustCompile(`cannot unmarshal (.*?) into Go struct field (\S+) of type (\S+)`)
	// the schema validator: validating /properties/files/items: type: 1 has type "integer", want "string"
	schemaPath = regexp.MustCompile(`validating (/properties/\S*): `)
)

// argumentError is the refusal of an argument error that the SDK wrote as text, or false when
// text is not one.
func argumentError(text string) (string, bool) {
	const refused = "[request refused: "
	if m := goFieldError.FindStringSubmatch(text); m != nil {
		field := m[2]
		if parts := strings.SplitN(field, ".", 3); len(parts) == 3 {
			field = parts[2] // drop the package and the type: main.bashIn.timeout_ms
		}
		want := "a value of its type"
		switch t := m[3]; {
		case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
			want = "an integer in range"
		case t == "string":
			want = "a string"
		case t == "bool":
			want = "true or false"
		}
		return refused + "argument " + field + " must be " + want + "]", true
	}
	rest, ok := strings.CutPrefix(text, `validating "arguments": `)
	if !ok {
		return "", false
	}
	rest = strings.TrimPrefix(rest, "validating root: ")
	if names, ok := strings.CutPrefix(rest, "required: missing properties: "); ok {
		return refused + "missing argument " + nameList(names) + "]", true
	}
	if names, ok := strings.CutPrefix(rest, "unexpected additional properties "); ok {
		return refused + "unknown argument " + nameList(names) + "]", true
	}
	if all := schemaPath.FindAllStringSubmatchIndex(rest, -1); len(all) > 0 {
		last := all[len(all)-1]
		path := rest[last[2]:last[3]]
		detail := rest[last[1]:]
		if names, ok := strings.CutPrefix(detail, "required: missing properties: "); ok {
			return refused + "missing argument " + argumentName(path) + "." + strings.Trim(nameList(names), `"`) + "]", true
		}
		return refused + "argument " + argumentName(path) + ": " + detail + "]", true
	}
	return refused + "the arguments: " + rest + "]", true
}

// argumentName is a schema path as an argument: /properties/files/items is files[].
func argumentName(path string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		switch p {
		case "properties":
		case "items":
			b.WriteString("[]")
		default:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(p)
		}
	}
	return b.String()
}

// nameList is a validator's list of names as text, sorted: ["b" "a"] and ["a","b"] are "a", "b".
func nameList(s string) string {
	s = strings.TrimSpace(s)
	inner, ok := strings.CutPrefix(s, "[")
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return s
	}
	names := strings.FieldsFunc(inner, func(r rune) bool { return r == ' ' || r == ',' })
	for i, n := range names {
		names[i] = `"` + strings.Trim(n, `"`) + `"`
	}
	slices.Sort(names) // the validator's order is a map's
	return strings.Join(names, ", ")
}
