package apifile

import (
	"fmt"
	"go/types"
	"io"
	"path"
	"strings"
	"text/tabwriter"
)

// Count is the number of exported identifiers of one package, by kind.
type Count struct {
	Path   string
	Consts int
	Vars   int
	Funcs  int
	Types  int // aliases included
	// Methods declared on the package's exported types (promoted ones are
	// counted where they are declared) and in its exported interfaces.
	Methods int
	Fields  int // exported struct fields of exported types, embedded ones included
	Lines   int // lines of the API file
}

// Total is every exported identifier the package declares.
func (c Count) Total() int {
	return c.Consts + c.Vars + c.Funcs + c.Types + c.Methods + c.Fields
}

// CountOf counts the exported identifiers pkg declares.
func CountOf(pkg *types.Package) Count {
	c := Count{Path: pkg.Path(), Lines: len(Lines(pkg))}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			c.Consts++
		case *types.Var:
			c.Vars++
		case *types.Func:
			c.Funcs++
		case *types.TypeName:
			c.Types++
			named, ok := obj.Type().(*types.Named)
			if obj.IsAlias() {
				// An alias exposing an internal type brings its fields and methods.
				named = internalTarget(obj)
				ok = named != nil
			}
			if !ok {
				continue
			}
			for i := 0; i < named.NumMethods(); i++ {
				if named.Method(i).Exported() {
					c.Methods++
				}
			}
			switch u := named.Underlying().(type) {
			case *types.Interface:
				for i := 0; i < u.NumExplicitMethods(); i++ {
					if u.ExplicitMethod(i).Exported() {
						c.Methods++
					}
				}
			case *types.Struct:
				for i := 0; i < u.NumFields(); i++ {
					if u.Field(i).Exported() {
						c.Fields++
					}
				}
			}
		}
	}
	return c
}

// WriteCounts writes counts as a table, a row per package and a row of
// totals, paths relative to module (its root package by its last element).
func WriteCounts(out io.Writer, module string, counts []Count) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "package\tconst\tvar\tfunc\ttype\tmethod\tfield\ttotal\tAPI lines")
	var sum Count
	for _, c := range counts {
		rel := strings.TrimPrefix(strings.TrimPrefix(c.Path, module), "/")
		if rel == "" {
			rel = path.Base(module)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", rel,
			c.Consts, c.Vars, c.Funcs, c.Types, c.Methods, c.Fields, c.Total(), c.Lines)
		sum.Consts += c.Consts
		sum.Vars += c.Vars
		sum.Funcs += c.Funcs
		sum.Types += c.Types
		sum.Methods += c.Methods
		sum.Fields += c.Fields
		sum.Lines += c.Lines
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n",
		sum.Consts, sum.Vars, sum.Funcs, sum.Types, sum.Methods, sum.Fields, sum.Total(), sum.Lines)
	return tw.Flush()
}
