package cryptopay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsComparedInConstantTime is a static check of the package's own
// source: no webhook token, secret, MAC or signature is compared with ==,
// !=, bytes.Equal, bytes.Compare, strings.Compare or strings.EqualFold
// (each returns early at the first differing byte, which leaks how much of
// a forged token was right), and the token check uses hmac.Equal. A
// behavioural test cannot see timing on a noisy machine; the source can.
func TestSecretsComparedInConstantTime(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := filepath.Glob(filepath.Join("webhook", "*.go")) // the webhook receiver's package
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, hooks...)
	secretish := func(e ast.Expr) bool {
		var name string
		switch x := e.(type) {
		case *ast.Ident:
			name = x.Name
		case *ast.SelectorExpr:
			name = x.Sel.Name
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "webhookToken" {
				return true
			}
			return false
		default:
			return false
		}
		n := strings.ToLower(name)
		for _, s := range []string{"token", "secret", "mac", "signature", "sig"} {
			if n == s || strings.HasPrefix(n, s) || strings.HasSuffix(n, s) {
				return true
			}
		}
		return false
	}
	literal := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.BasicLit:
			return true
		case *ast.Ident:
			return x.Name == "nil"
		}
		return false
	}
	fset := token.NewFileSet()
	sawHMACEqual := false
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if (x.Op == token.EQL || x.Op == token.NEQ) && !literal(x.X) && !literal(x.Y) && (secretish(x.X) || secretish(x.Y)) {
					t.Errorf("%s: a secret compared with %s; use hmac.Equal", fset.Position(x.Pos()), x.Op)
				}
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				if pkg == nil {
					return true
				}
				fn := pkg.Name + "." + sel.Sel.Name
				switch fn {
				case "hmac.Equal", "subtle.ConstantTimeCompare":
					sawHMACEqual = true
				case "bytes.Equal", "bytes.Compare", "strings.Compare", "strings.EqualFold":
					for _, a := range x.Args {
						if secretish(a) {
							t.Errorf("%s: a secret compared with %s; use hmac.Equal", fset.Position(x.Pos()), fn)
						}
					}
				}
			}
			return true
		})
	}
	if !sawHMACEqual {
		t.Error("no constant-time comparison (hmac.Equal) found: how are webhook tokens checked?")
	}
}
