package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// An Alias is a verb that stands for one call of another verb, such as a
// named command (cmd.deploy for proc.run with fixed arguments). Its
// arguments have no Go type: their fields are given (string, int and enum
// kinds, every one required), and Expand checks a call's arguments and
// returns the call it stands for. The registry lists an alias like any
// verb (its schema, usage, menus, tools); running it runs that call, whose
// outcome (the target's verb, arguments and result) is the alias's.
type Alias struct {
	Info Info
	// Arguments are its fields, in the order chat fills them by position.
	Arguments []Field
	// Target is the verb it calls: its result type is the alias's. An
	// alias never targets an alias.
	Target string
	// Expand checks the arguments (a JSON object) and returns the call.
	// It must be deterministic: the hub and the executor both call it.
	Expand func(args json.RawMessage) (Envelope, error)
}

// aliasArgs are an alias call's arguments, checked, and the call they
// expand to.
type aliasArgs struct {
	raw  json.RawMessage
	call Envelope
}

// ReplaceAliases installs aliases as the registry's aliases whose names
// start with prefix, replacing every alias it had under prefix, at once:
// a lookup sees the old set or the new, never a mix. The new set is
// checked whole first (names under prefix and not taken by a verb,
// targets that are registered verbs, fields of a kind an alias takes);
// on an error nothing changes.
func (r *Registry) ReplaceAliases(prefix string, aliases []Alias) error {
	prefix = strings.ToLower(prefix)
	r.mu.Lock()
	defer r.mu.Unlock()
	add := map[string]*registration{}
	for _, a := range aliases {
		reg, err := r.aliasRegistration(prefix, a)
		if err != nil {
			return err
		}
		key := strings.ToLower(a.Info.Name)
		if add[key] != nil {
			return fmt.Errorf("alias %s: registered twice", a.Info.Name)
		}
		add[key] = reg
	}
	for key, reg := range r.verbs {
		if reg.alias != nil && strings.HasPrefix(key, prefix) {
			delete(r.verbs, key)
		}
	}
	for key, reg := range add {
		r.verbs[key] = reg
	}
	if r.aliasPrefixes == nil {
		r.aliasPrefixes = map[string]bool{}
	}
	r.aliasPrefixes[prefix] = true
	for _, f := range r.watchers {
		go f()
	}
	return nil
}

// aliasRegistration checks a and builds its registration; r.mu is held.
func (r *Registry) aliasRegistration(prefix string, a Alias) (*registration, error) {
	key := strings.ToLower(a.Info.Name)
	if err := validName(a.Info.Name); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(key, prefix) {
		return nil, fmt.Errorf("alias %s: its name does not start with %s", a.Info.Name, prefix)
	}
	if old, ok := r.verbs[key]; ok && old.alias == nil {
		return nil, fmt.Errorf("alias %s: verb %q is already registered", a.Info.Name, old.info.Name)
	}
	if old, ok := r.chatNames[strings.TrimPrefix(key, prefix)]; ok {
		return nil, fmt.Errorf("alias %s: /%s is already %s's name in chat", a.Info.Name, strings.TrimPrefix(key, prefix), old.info.Name)
	}
	target, ok := r.verbs[strings.ToLower(strings.ReplaceAll(a.Target, "_", "."))]
	switch {
	case !ok:
		return nil, fmt.Errorf("alias %s: its verb %s is not a verb of this hub (see hub verbs)", a.Info.Name, a.Target)
	case target.alias != nil:
		return nil, fmt.Errorf("alias %s: its verb %s is itself an alias", a.Info.Name, a.Target)
	case a.Expand == nil:
		return nil, fmt.Errorf("alias %s: no Expand", a.Info.Name)
	}
	for _, f := range a.Arguments {
		if f.Kind != KindString && f.Kind != KindInt && f.Kind != KindEnum {
			return nil, fmt.Errorf("alias %s: argument %s is of kind %s (accepted: string, int, enum)", a.Info.Name, f.Name, f.Kind)
		}
	}
	al := a
	al.Arguments = append([]Field(nil), a.Arguments...)
	for i := range al.Arguments {
		al.Arguments[i].Required = true
	}
	return &registration{info: a.Info, alias: &al, resultType: target.resultType}, nil
}

// Watch calls f (in a goroutine of its own) after every change of the
// registry's aliases, so that what lists the verbs (a platform's command
// menu) can list them again. The returned func stops the calls.
func (r *Registry) Watch(f func()) (stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watchers == nil {
		r.watchers = map[int]func(){}
	}
	id := r.nextWatch
	r.nextWatch++
	r.watchers[id] = f
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.watchers, id)
	}
}

// Expand returns the call env stands for when its verb is an alias (the
// target verb with the alias's arguments in place, in env's workspace),
// and env itself otherwise. Errors are invalid_arguments *Errors that
// name the alias.
func (r *Registry) Expand(env Envelope) (Envelope, error) {
	reg, ok := r.lookup(env.Verb)
	if !ok || reg.alias == nil {
		return env, nil
	}
	a, err := reg.decodeAlias(env.Arguments)
	if err != nil {
		return Envelope{}, err
	}
	a.call.ID, a.call.Workspace = env.ID, env.Workspace
	return a.call, nil
}

// IsAlias reports whether name is an alias's verb.
func (r *Registry) IsAlias(name string) bool {
	reg, ok := r.lookup(name)
	return ok && reg.alias != nil
}

// decodeAlias checks an alias call's arguments by its Expand.
func (reg *registration) decodeAlias(raw json.RawMessage) (*aliasArgs, error) {
	call, err := reg.alias.Expand(raw)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, reg.argError("%v", err)
	}
	return &aliasArgs{raw: raw, call: call}, nil
}

// aliasSchema is the type of an alias's arguments.
func (reg *registration) aliasSchema() TypeSchema {
	name := strings.NewReplacer(".", " ").Replace(reg.info.Name)
	parts := strings.Fields(name)
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return TypeSchema{Name: strings.Join(parts, "") + "Arguments", Description: reg.info.Summary, Fields: reg.alias.Arguments}
}

// runAlias runs the call an alias call stands for.
func (x *Executor) runAlias(ctx context.Context, a *aliasArgs) *Outcome {
	return x.Run(ctx, a.call)
}

// CheckArguments reports whether args (a JSON object) are arguments the
// verb accepts, as a call would decode them (its invalid_arguments
// *Error); nothing runs.
func (r *Registry) CheckArguments(verb string, args json.RawMessage) error {
	reg, ok := r.lookup(verb)
	if !ok {
		return r.unknownVerb(verb)
	}
	_, err := reg.decodeArgs(args)
	return err
}
