package apifile

import (
	"go/types"
	"sort"
	"strings"
)

// Lines returns the exported API of pkg as sorted lines in the form of the
// Go project's api/go1.*.txt files, one declaration a line:
//
//	pkg example.com/p, const Mode0 = 0
//	pkg example.com/p, const Mode0 Mode
//	pkg example.com/p, func Open(context.Context, ...Option) (*Client, error)
//	pkg example.com/p, method (*Client) Close() error
//	pkg example.com/p, type Client struct
//	pkg example.com/p, type Client struct, Name string
//	pkg example.com/p, type Client struct, embedded Base
//	pkg example.com/p, type Reader interface { Read }
//	pkg example.com/p, type Reader interface, Read([]byte) (int, error)
//	pkg example.com/p, var ErrClosed error
//
// Types of other packages are qualified by package name; type parameters
// are written by index ($0, $1, ...) so that renaming one is no change.
// A type's methods are its method set, promoted methods included, each
// under the receiver it needs (T or *T).
//
// A type of a package outside the API (internal) that a public alias
// exposes is the alias's: the alias is written as the type it stands for,
// its fields and methods included, under the alias's name, and the type is
// called by that name wherever it appears. The aliases are looked for in
// pkg, in the packages it imports and in context: the packages loaded with
// it (the export data of a package that uses an alias of another does not
// always record the alias).
func Lines(pkg *types.Package, context ...*types.Package) []string {
	w := newWriter(pkg, context)
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			w.emit("const " + name + " = " + obj.Val().ExactString())
			w.emit("const " + name + " " + w.constType(obj.Type()))
		case *types.Var:
			w.emit("var " + name + " " + w.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			w.emit("func " + name + w.typeParams(sig.TypeParams()) + w.signature(sig))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	sort.Strings(w.lines)
	return w.lines
}

// writer collects the lines of one package.
type writer struct {
	pkg     *types.Package
	lines   []string
	exposed []exposure
}

// exposure is a public alias of a type of a package outside the API.
type exposure struct {
	alias  *types.TypeName
	target *types.Named
}

func newWriter(pkg *types.Package, context []*types.Package) *writer {
	w := &writer{pkg: pkg}
	seen := map[*types.Package]bool{}
	for _, p := range append(append([]*types.Package{pkg}, pkg.Imports()...), context...) {
		if seen[p] || (p != pkg && !Public(p.Path(), p.Name())) {
			continue
		}
		seen[p] = true
		for _, name := range p.Scope().Names() {
			if obj, ok := p.Scope().Lookup(name).(*types.TypeName); ok && obj.Exported() && obj.IsAlias() {
				if target := internalTarget(obj); target != nil {
					w.exposed = append(w.exposed, exposure{obj, target})
				}
			}
		}
	}
	return w
}

// internalTarget returns the type an alias stands for when it is a
// non-generic named type of another package, one outside the API, else nil.
func internalTarget(alias *types.TypeName) *types.Named {
	named, ok := types.Unalias(alias.Type()).(*types.Named)
	if !ok || named.TypeArgs().Len() > 0 || named.Obj().Pkg() == nil || named.Obj().Pkg() == alias.Pkg() {
		return nil
	}
	if p := named.Obj().Pkg(); Public(p.Path(), p.Name()) {
		return nil
	}
	return named
}

// sameObject reports whether a and b are one declaration, read from the
// export data of two packages.
func sameObject(a, b types.Object) bool {
	return a == b || (a.Name() == b.Name() && a.Pkg() != nil && b.Pkg() != nil && a.Pkg().Path() == b.Pkg().Path())
}

// exposedAs returns the public alias that names t, if any.
func (w *writer) exposedAs(t *types.Named) *types.TypeName {
	for _, e := range w.exposed {
		if sameObject(e.target.Obj(), t.Obj()) {
			return e.alias
		}
	}
	return nil
}

func (w *writer) emit(line string) {
	w.lines = append(w.lines, "pkg "+w.pkg.Path()+", "+line)
}

func (w *writer) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		if target := internalTarget(obj); target != nil {
			w.describe(name, target)
			return
		}
		w.emit("type " + name + " = " + w.typ(types.Unalias(obj.Type())))
		return
	}
	if named, ok := obj.Type().(*types.Named); ok {
		w.describe(name, named)
	}
}

// describe writes a named type's declaration, fields and methods under name.
func (w *writer) describe(name string, named *types.Named) {
	decl := "type " + name + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit(decl + " struct")
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			switch {
			case f.Embedded() && exportedEmbedded(f.Type()):
				w.emit(decl + " struct, embedded " + w.typ(f.Type()))
			case !f.Embedded() && f.Exported():
				w.emit(decl + " struct, " + f.Name() + " " + w.typ(f.Type()))
			}
		}
	case *types.Interface:
		w.iface(decl, u)
		return // an interface's methods are its lines above
	default:
		w.emit(decl + " " + w.typ(u))
	}
	w.methods(name, named)
}

// exportedEmbedded reports whether an embedded field's type is named by an
// exported identifier (an unexported one is not part of the API; the
// exported methods it promotes are, through the method set).
func exportedEmbedded(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Exported()
	}
	return false
}

func (w *writer) iface(decl string, it *types.Interface) {
	var names []string
	unexported := false
	for i := 0; i < it.NumMethods(); i++ {
		m := it.Method(i)
		if !m.Exported() {
			unexported = true
			continue
		}
		names = append(names, m.Name())
		w.emit(decl + " interface, " + m.Name() + w.signature(m.Type().(*types.Signature)))
	}
	for _, e := range w.constraintElems(it) {
		w.emit(decl + " interface, " + e)
	}
	if unexported {
		names = append(names, "unexported methods")
		w.emit(decl + " interface, unexported methods")
	}
	sort.Strings(names)
	if len(names) == 0 {
		w.emit(decl + " interface {}")
		return
	}
	w.emit(decl + " interface { " + strings.Join(names, ", ") + " }")
}

// methods writes the exported methods of T's and *T's method sets: those
// callable on a value under (T), the rest under (*T).
func (w *writer) methods(recv string, named *types.Named) {
	if tp := named.TypeParams(); tp.Len() > 0 {
		var args []string
		for i := 0; i < tp.Len(); i++ {
			args = append(args, w.typ(tp.At(i)))
		}
		recv += "[" + strings.Join(args, ", ") + "]"
	}
	onValue := map[string]bool{}
	vset := types.NewMethodSet(named)
	for i := 0; i < vset.Len(); i++ {
		m := vset.At(i).Obj().(*types.Func)
		if m.Exported() {
			onValue[m.Name()] = true
			w.emit("method (" + recv + ") " + m.Name() + w.signature(m.Type().(*types.Signature)))
		}
	}
	pset := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < pset.Len(); i++ {
		m := pset.At(i).Obj().(*types.Func)
		if m.Exported() && !onValue[m.Name()] {
			w.emit("method (*" + recv + ") " + m.Name() + w.signature(m.Type().(*types.Signature)))
		}
	}
}

// constType names an untyped constant's kind as the Go api files do.
func (w *writer) constType(t types.Type) string {
	if b, ok := t.(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		switch b.Kind() {
		case types.UntypedBool:
			return "ideal-bool"
		case types.UntypedInt:
			return "ideal-int"
		case types.UntypedRune:
			return "ideal-rune"
		case types.UntypedFloat:
			return "ideal-float"
		case types.UntypedComplex:
			return "ideal-complex"
		case types.UntypedString:
			return "ideal-string"
		}
	}
	return w.typ(t)
}
