// Command mutation-gen lists the mutants of Go source files with standard mutation operators.
//
//	mutation-gen -root <module dir> <package dir> [<package dir>/... ...]
//	mutation-gen -funcs -root <module dir> <package dir> ...   (functions and their line ranges)
//
// A directory ending in /... includes its subdirectories. Test files, generated files and
// code inside logging calls are skipped. Each mutant is one JSON object per line on stdout:
// the file (relative to -root), its position, the operator, and the edits that make it (byte
// ranges of the original file and their replacement text), so any program can apply it.
//
// Operators:
//
//	negate-cond    a relational operator replaced by its negation (== !=, < >=, <= >, > <=, >= <)
//	boundary       a relational operator moved across its boundary (< <=, <= <, > >=, >= >)
//	logical        && replaced by || and || by &&
//	arithmetic     + -, - +, * /, / *, % * (not where an operand is a string literal)
//	negate-if      an if statement's condition c replaced by !(c)
//	remove-call    a call statement removed
//	remove-assign  an assignment (=, op=) or increment/decrement statement removed
//	constant       an integer literal n replaced by n+1 (0 by 1, 1 by 0); true and false swapped
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Edit replaces the bytes [Start, End) of the original file by Text.
type Edit struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

// Mutant is one change of one file.
type Mutant struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	EndLine  int    `json:"end_line"`
	Operator string `json:"operator"`
	Original string `json:"original"`
	Mutated  string `json:"mutated"`
	Func     string `json:"func"`
	Edits    []Edit `json:"edits"`
}

// Calls whose arguments only reach a log: mutants there change no behaviour a test can observe.
var logMethods = map[string]bool{
	"Info": true, "Infof": true, "V": true, "Error": true, "WithValues": true,
	"Warning": true, "Warningf": true, "Infoln": true, "Debug": true,
}

var negated = map[token.Token]token.Token{
	token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ,
	token.LEQ: token.GTR, token.GTR: token.LEQ, token.GEQ: token.LSS,
}

var boundary = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
}

var arithmetic = map[token.Token]token.Token{
	token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL, token.REM: token.MUL,
}

type visitor struct {
	fset    *token.FileSet
	src     []byte
	file    string
	funcs   []string          // enclosing function names
	forPost map[ast.Stmt]bool // a loop's post statement: removing it would never end the loop
	mutants []Mutant
}

func (v *visitor) emit(op string, from, to token.Pos, edits []Edit) {
	p, e := v.fset.Position(from), v.fset.Position(to)
	original := string(v.src[p.Offset:e.Offset])
	mutated := applyEdits(v.src[p.Offset:e.Offset], edits, p.Offset)
	fn := ""
	if len(v.funcs) > 0 {
		fn = v.funcs[len(v.funcs)-1]
	}
	v.mutants = append(v.mutants, Mutant{
		File: v.file, Line: p.Line, Col: p.Column, EndLine: e.Line, Operator: op,
		Original: oneLine(original), Mutated: oneLine(mutated), Func: fn, Edits: edits,
	})
}

func applyEdits(span []byte, edits []Edit, base int) string {
	var b strings.Builder
	at := 0
	for _, ed := range edits {
		b.Write(span[at : ed.Start-base])
		b.WriteString(ed.Text)
		at = ed.End - base
	}
	b.Write(span[at:])
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func (v *visitor) off(p token.Pos) int { return v.fset.Position(p).Offset }

func isLogCall(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if logMethods[sel.Sel.Name] {
		return true
	}
	// klog.X / log.X / setupLog.X and recorder events are logging too only by name: keep them.
	if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "klog" || id.Name == "log" || id.Name == "setupLog") {
		return true
	}
	return false
}

func isStringLit(e ast.Expr) bool {
	b, ok := e.(*ast.BasicLit)
	return ok && b.Kind == token.STRING
}

func (v *visitor) walk(n ast.Node) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncDecl:
			v.funcs = append(v.funcs, x.Name.Name)
			if x.Body != nil {
				v.walk(x.Body)
			}
			v.funcs = v.funcs[:len(v.funcs)-1]
			return false
		case *ast.CallExpr:
			if isLogCall(x) {
				return false // nothing inside a log call, and the call itself stays
			}
		case *ast.GenDecl:
			if x.Tok == token.IMPORT {
				return false
			}
		case *ast.ForStmt:
			if x.Post != nil {
				v.forPost[x.Post] = true
			}
		case *ast.BinaryExpr:
			v.binary(x)
		case *ast.IfStmt:
			if x.Cond != nil && !relational(x.Cond) { // a == b: negate-cond already makes a != b
				s, e := v.off(x.Cond.Pos()), v.off(x.Cond.End())
				v.emit("negate-if", x.Cond.Pos(), x.Cond.End(), []Edit{{s, s, "!("}, {e, e, ")"}})
			}
		case *ast.ExprStmt:
			if c, ok := x.X.(*ast.CallExpr); ok && !isLogCall(c) && len(v.funcs) > 0 {
				v.emit("remove-call", x.Pos(), x.End(), []Edit{{v.off(x.Pos()), v.off(x.End()), "_ = 0"}})
			}
		case *ast.AssignStmt:
			if x.Tok != token.DEFINE && len(v.funcs) > 0 && !blankOnly(x) && !v.forPost[x] {
				v.emit("remove-assign", x.Pos(), x.End(), []Edit{{v.off(x.Pos()), v.off(x.End()), "_ = 0"}})
			}
		case *ast.IncDecStmt:
			if len(v.funcs) > 0 && !v.forPost[x] {
				v.emit("remove-assign", x.Pos(), x.End(), []Edit{{v.off(x.Pos()), v.off(x.End()), "_ = 0"}})
			}
		case *ast.BasicLit:
			if x.Kind == token.INT {
				if n, err := strconv.ParseInt(x.Value, 0, 64); err == nil {
					repl := strconv.FormatInt(n+1, 10)
					if n == 1 {
						repl = "0"
					}
					v.emit("constant", x.Pos(), x.End(), []Edit{{v.off(x.Pos()), v.off(x.End()), repl}})
				}
			}
		case *ast.Ident:
			if (x.Name == "true" || x.Name == "false") && x.Obj == nil {
				repl := map[string]string{"true": "false", "false": "true"}[x.Name]
				v.emit("constant", x.Pos(), x.End(), []Edit{{v.off(x.Pos()), v.off(x.End()), repl}})
			}
		}
		return true
	})
}

func recvName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

func relational(e ast.Expr) bool {
	b, ok := e.(*ast.BinaryExpr)
	if !ok {
		return false
	}
	_, rel := negated[b.Op]
	return rel
}

// blankOnly: `_ = x` (a compile-time assertion or a discarded value) has nothing to remove.
func blankOnly(a *ast.AssignStmt) bool {
	for _, l := range a.Lhs {
		if id, ok := l.(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
	}
	return true
}

func (v *visitor) binary(x *ast.BinaryExpr) {
	opStart := v.off(x.OpPos)
	opEnd := opStart + len(x.Op.String())
	replace := func(op string, to token.Token) {
		v.emit(op, x.Pos(), x.End(), []Edit{{opStart, opEnd, to.String()}})
	}
	if to, ok := negated[x.Op]; ok {
		replace("negate-cond", to)
	}
	if to, ok := boundary[x.Op]; ok {
		replace("boundary", to)
	}
	switch x.Op {
	case token.LAND:
		replace("logical", token.LOR)
	case token.LOR:
		replace("logical", token.LAND)
	}
	if to, ok := arithmetic[x.Op]; ok && !isStringLit(x.X) && !isStringLit(x.Y) {
		replace("arithmetic", to)
	}
}

func generated(f *ast.File) bool {
	for _, c := range f.Comments {
		for _, l := range c.List {
			if strings.HasPrefix(l.Text, "// Code generated") && strings.HasSuffix(l.Text, "DO NOT EDIT.") {
				return true
			}
		}
	}
	return false
}

func files(root, dir string) ([]string, error) {
	recursive := strings.HasSuffix(dir, "/...")
	dir = strings.TrimSuffix(dir, "/...")
	var out []string
	base := filepath.Join(root, dir)
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != base && (!recursive || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func main() {
	root := flag.String("root", ".", "module root the package directories are relative to")
	funcs := flag.Bool("funcs", false, "list each function (file, name, first and last line) instead of mutants")
	flag.Parse()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var paths []string
	for _, dir := range flag.Args() {
		found, err := files(*root, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		paths = append(paths, found...)
	}
	sort.Strings(paths)
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if generated(f) {
			continue
		}
		rel, _ := filepath.Rel(*root, p)
		if *funcs {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					name := fd.Name.Name
					if fd.Recv != nil && len(fd.Recv.List) == 1 {
						name = recvName(fd.Recv.List[0].Type) + "." + name
					}
					line := map[string]any{
						"file": filepath.ToSlash(rel), "func": name,
						"line": fset.Position(fd.Pos()).Line, "end_line": fset.Position(fd.End()).Line,
					}
					if err := enc.Encode(line); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(2)
					}
				}
			}
			continue
		}
		v := &visitor{fset: fset, src: src, file: filepath.ToSlash(rel), forPost: map[ast.Stmt]bool{}}
		for _, d := range f.Decls {
			v.walk(d)
		}
		for _, m := range v.mutants {
			if err := enc.Encode(m); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
	}
}
