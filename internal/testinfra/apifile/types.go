package apifile

import (
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// typ writes a type as the api files do. It is written here rather than
// with types.TypeString so that the text is the same whichever Go version
// writes it: aliases are written as the type they stand for (whether an
// alias or its target is named is no change to the API, and go/types shows
// aliases only under some settings), an empty interface as interface{},
// type parameters by index.
func (w *writer) typ(t types.Type) string {
	var b strings.Builder
	w.write(&b, t)
	return b.String()
}

func (w *writer) write(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		w.write(b, types.Unalias(t))
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			b.WriteString("unsafe.Pointer")
			return
		}
		b.WriteString(t.Name())
	case *types.Pointer:
		b.WriteString("*")
		w.write(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.write(b, t.Elem())
	case *types.Array:
		b.WriteString("[" + strconv.FormatInt(t.Len(), 10) + "]")
		w.write(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.write(b, t.Key())
		b.WriteString("]")
		w.write(b, t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendRecv:
			b.WriteString("chan ")
			// chan (<-chan T): without the parentheses it is chan<- (chan T).
			if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
				b.WriteString("(")
				w.write(b, t.Elem())
				b.WriteString(")")
				return
			}
		case types.SendOnly:
			b.WriteString("chan<- ")
		case types.RecvOnly:
			b.WriteString("<-chan ")
		}
		w.write(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Named:
		obj := t.Obj()
		if alias := w.exposedAs(t); alias != nil {
			obj = alias
		}
		if obj.Pkg() != nil && obj.Pkg() != w.pkg {
			b.WriteString(obj.Pkg().Name() + ".")
		}
		b.WriteString(obj.Name())
		if args := t.TypeArgs(); args.Len() > 0 {
			b.WriteString("[")
			for i := 0; i < args.Len(); i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				w.write(b, args.At(i))
			}
			b.WriteString("]")
		}
	case *types.TypeParam:
		b.WriteString("$" + strconv.Itoa(t.Index()))
	case *types.Struct:
		if t.NumFields() == 0 {
			b.WriteString("struct{}")
			return
		}
		b.WriteString("struct{ ")
		for i := 0; i < t.NumFields(); i++ {
			if i > 0 {
				b.WriteString("; ")
			}
			f := t.Field(i)
			if !f.Embedded() {
				b.WriteString(f.Name() + " ")
			}
			w.write(b, f.Type())
			if tag := t.Tag(i); tag != "" {
				b.WriteString(" " + strconv.Quote(tag))
			}
		}
		b.WriteString(" }")
	case *types.Interface:
		var elems []string
		for i := 0; i < t.NumMethods(); i++ {
			m := t.Method(i)
			elems = append(elems, m.Name()+w.signature(m.Type().(*types.Signature)))
		}
		elems = append(elems, w.constraintElems(t)...)
		if len(elems) == 0 {
			b.WriteString("interface{}")
			return
		}
		b.WriteString("interface{ " + strings.Join(elems, "; ") + " }")
	case *types.Union:
		for i := 0; i < t.Len(); i++ {
			if i > 0 {
				b.WriteString(" | ")
			}
			term := t.Term(i)
			if term.Tilde() {
				b.WriteString("~")
			}
			w.write(b, term.Type())
		}
	default:
		// Tuples appear only inside signatures; nothing else is left.
		b.WriteString(t.String())
	}
}

// signature writes a function's parameters and results without names:
// "(int, ...string) (T, error)".
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	b.WriteString("(")
	params := sig.Params()
	for i := 0; i < params.Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		w.write(&b, t)
	}
	b.WriteString(")")
	results := sig.Results()
	switch results.Len() {
	case 0:
	case 1:
		b.WriteString(" ")
		w.write(&b, results.At(0).Type())
	default:
		b.WriteString(" (")
		for i := 0; i < results.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			w.write(&b, results.At(i).Type())
		}
		b.WriteString(")")
	}
	return b.String()
}

// typeParams writes a type parameter list, "[$0 comparable, $1 interface{}]",
// or nothing.
func (w *writer) typeParams(list *types.TypeParamList) string {
	if list.Len() == 0 {
		return ""
	}
	var parts []string
	for i := 0; i < list.Len(); i++ {
		tp := list.At(i)
		parts = append(parts, w.typ(tp)+" "+w.typ(tp.Constraint()))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// constraintElems writes what an interface embeds beyond methods (its
// methods are in its method set): unions, ~T terms, and embedded
// interfaces that constrain a type set, comparable among them.
func (w *writer) constraintElems(it *types.Interface) []string {
	var elems []string
	for i := 0; i < it.NumEmbeddeds(); i++ {
		e := it.EmbeddedType(i)
		if ei, ok := e.Underlying().(*types.Interface); ok && ei.IsMethodSet() {
			continue
		}
		elems = append(elems, w.typ(e))
	}
	return elems
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
