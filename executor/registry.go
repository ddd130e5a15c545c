package executor

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Result is embedded in every verb result type. The executor fills it in:
// Succeeded is true when the verb returned no error, otherwise ErrorCode and
// ErrorMessage describe what went wrong.
type Result struct {
	Succeeded    bool      `json:"succeeded" desc:"Whether the verb ran and did what was asked"`
	ErrorMessage string    `json:"errorMessage,omitempty" desc:"What went wrong, for people; empty on success"`
	ErrorCode    ErrorCode `json:"errorCode,omitempty" desc:"What went wrong, for programs: unknown_verb, invalid_arguments, not_found, forbidden_path, too_large, timeout, io_error, …; empty on success"`
}

func (r *Result) verbResult() *Result { return r }

// resultHolder is implemented by every type that embeds Result.
type resultHolder interface{ verbResult() *Result }

// Verb runs one verb with typed arguments. It is the verb-side analogue of
// http.Handler: a verb returns its typed result, or an error (preferably an
// *Error) that the executor turns into a failed result.
type Verb[A, R any] interface {
	Run(ctx context.Context, args A) (R, error)
}

// VerbFunc adapts an ordinary function to Verb.
type VerbFunc[A, R any] func(ctx context.Context, args A) (R, error)

// Run calls f(ctx, args).
func (f VerbFunc[A, R]) Run(ctx context.Context, args A) (R, error) { return f(ctx, args) }

// Info describes a verb for listings, help and access control.
type Info struct {
	// Name is the canonical name, such as "fs.readFile". Lookups ignore case.
	Name string
	// Summary is one line shown by `hub verbs`, /help and command menus.
	Summary string
	// ReadOnly verbs have no side effects; the built-in reader role may run them.
	ReadOnly bool
	// Permission, when set, is the verb whose grant this one needs
	// instead of its own (fs.upload is allowed where fs.writeFile is).
	Permission string
	// TakesFile says the verb saves the file sent with the message
	// (UploadFrom).
	TakesFile bool
	// ChatOnly says the verb needs what only a chat conversation gives (a
	// file sent with the message, files sent back): surfaces that have
	// none leave it out (MCP's tools, the agents' instructions).
	ChatOnly bool
	// Aliases are other names the chat grammar accepts for the verb, such
	// as upload for /upload; lower-case letters, not a built-in's name.
	Aliases []string
}

// Registry maps verb names, case-insensitively, to typed handlers. It is safe
// for concurrent use; registration normally happens once at start-up.
type Registry struct {
	mu    sync.RWMutex
	verbs map[string]*registration // keyed by lower-cased name
	// chatNames are the other names the chat grammar accepts for a verb
	// (Info.Aliases: upload for fs.upload).
	chatNames map[string]*registration
	// aliasPrefixes are the prefixes of aliases (ReplaceAliases): a name
	// without a dot is also looked up under them (deploy: cmd.deploy).
	aliasPrefixes map[string]bool
	watchers      map[int]func() // Watch: called after a change of the aliases
	nextWatch     int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{verbs: map[string]*registration{}, chatNames: map[string]*registration{}}
}

type registration struct {
	info       Info
	argsType   reflect.Type
	argFields  []structField   // jsonFields(argsType)
	argKnown   map[string]bool // the names of argFields
	resultType reflect.Type
	run        func(ctx context.Context, args any) (any, error)
	// alias is set for an alias (alias.go), which has no argsType and no
	// run of its own.
	alias *Alias

	schemaOnce sync.Once
	cached     VerbSchema
}

// Register adds a verb whose arguments decode into A and whose result is R.
// R must embed Result. Registering a name twice, ignoring case, is an error.
func Register[A, R any](r *Registry, info Info, v Verb[A, R]) error {
	if err := validName(info.Name); err != nil {
		return err
	}
	if err := validAliases(info); err != nil {
		return err
	}
	at := reflect.TypeFor[A]()
	rt := reflect.TypeFor[R]()
	if at.Kind() != reflect.Struct {
		return fmt.Errorf("register %s: arguments type %s must be a struct", info.Name, at)
	}
	if rt.Kind() != reflect.Struct {
		return fmt.Errorf("register %s: result type %s must be a struct", info.Name, rt)
	}
	if !reflect.PointerTo(rt).Implements(reflect.TypeFor[resultHolder]()) {
		return fmt.Errorf("register %s: result type %s must embed executor.Result", info.Name, rt)
	}
	fields := jsonFields(at)
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
	}
	reg := &registration{
		info:       info,
		argsType:   at,
		argFields:  fields,
		argKnown:   known,
		resultType: rt,
		run: func(ctx context.Context, args any) (any, error) {
			res, err := v.Run(ctx, *args.(*A))
			if err != nil {
				return nil, err
			}
			return &res, nil
		},
	}
	key := strings.ToLower(info.Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.verbs[key]; ok {
		return fmt.Errorf("register %s: verb %q is already registered", info.Name, old.info.Name)
	}
	for _, a := range info.Aliases {
		if old, ok := r.chatNames[a]; ok {
			return fmt.Errorf("register %s: alias %q is %s's already", info.Name, a, old.info.Name)
		}
		if old, ok := r.verbs[a]; ok {
			return fmt.Errorf("register %s: alias %q is the name of %s", info.Name, a, old.info.Name)
		}
	}
	r.verbs[key] = reg
	for _, a := range info.Aliases {
		r.chatNames[a] = reg
	}
	return nil
}

// MustRegister is Register for start-up code where a failure is a programming error.
func MustRegister[A, R any](r *Registry, info Info, v Verb[A, R]) {
	if err := Register(r, info, v); err != nil {
		panic(err)
	}
}

func validName(name string) error {
	if name == "" {
		return fmt.Errorf("register: verb name is empty")
	}
	parts := strings.Split(name, ".")
	for _, p := range parts {
		if p == "" {
			return fmt.Errorf("register %q: empty name segment (accepted: letters and digits separated by dots, like fs.readFile)", name)
		}
		for i, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
				return fmt.Errorf("register %q: character %q not allowed (accepted: letters and digits separated by dots, like fs.readFile)", name, c)
			}
		}
	}
	return nil
}

// lookup finds a verb by name, ignoring case. Underscores count as dots, so
// "fs_readfile" finds "fs.readFile" (the chat grammar's form).
func (r *Registry) lookup(name string) (*registration, bool) {
	r.mu.RLock()
	// A name spelled as its key (lower case, dots: valid names have no
	// underscore) is the key as it is; others are normalised first.
	reg, ok := r.verbs[name]
	r.mu.RUnlock()
	if ok {
		return reg, true
	}
	key := strings.ToLower(strings.ReplaceAll(name, "_", "."))
	r.mu.RLock()
	defer r.mu.RUnlock()
	if reg, ok = r.verbs[key]; ok {
		return reg, true
	}
	if reg, ok = r.chatNames[key]; ok {
		return reg, true
	}
	if !strings.Contains(key, ".") {
		for p := range r.aliasPrefixes {
			if reg, ok = r.verbs[p+key]; ok && reg.alias != nil {
				return reg, true
			}
		}
	}
	return nil, false
}

// Uploader returns the verb that saves the file sent with a message
// (Info.TakesFile); ok is false when none is registered.
func (r *Registry) Uploader() (Info, bool) {
	for _, v := range r.Verbs() {
		if v.TakesFile {
			return v, true
		}
	}
	return Info{}, false
}

// Lookup returns the verb's Info, ignoring case (and treating _ as .).
func (r *Registry) Lookup(name string) (Info, bool) {
	reg, ok := r.lookup(name)
	if !ok {
		return Info{}, false
	}
	return reg.info, true
}

// Verbs lists every registered verb sorted by name.
func (r *Registry) Verbs() []Info {
	r.mu.RLock()
	out := make([]Info, 0, len(r.verbs))
	for _, reg := range r.verbs {
		out = append(out, reg.info)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// unknownVerb is the error for a verb name the registry does not know, with
// the close matches and where to find the list; every surface uses it.
func (r *Registry) unknownVerb(name string) *Error {
	msg := fmt.Sprintf("Unknown verb '%s'.", name)
	if s := r.Suggest(name); len(s) > 0 {
		msg += " Did you mean: " + strings.Join(s, ", ") + "?"
	}
	msg += " Send /verbs (or run `hub verbs`) for the list, /help <verb> for one verb."
	return &Error{Code: CodeUnknownVerb, Message: msg}
}

// Suggest returns up to three registered names close to name, closest first.
func (r *Registry) Suggest(name string) []string {
	key := strings.ToLower(strings.ReplaceAll(name, "_", "."))
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for _, info := range r.Verbs() {
		lname := strings.ToLower(info.Name)
		d := editDistance(key, lname)
		// A shared dotted suffix or prefix ("readfile" for "fs.readFile") counts as close.
		if i := strings.LastIndexByte(lname, '.'); i >= 0 && key == lname[i+1:] {
			d = 1
		}
		if strings.HasPrefix(lname, key) && len(key) >= 2 {
			d = min(d, 2)
		}
		if d <= max(2, len(key)/3) {
			cands = append(cands, cand{info.Name, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	var out []string
	for i := 0; i < len(cands) && i < 3; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
