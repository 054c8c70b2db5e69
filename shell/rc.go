package shell

import (
	"path/filepath"
	"strconv"
	"strings"
)

// The shell side of a session: an rc file, read by the interactive bash instead of ~/.bashrc,
// that sets up the prompt marker, and the line typed for each command.
//
// Every name the rc file defines carries the session's nonce (__sk_<nonce>_p, ...), and so
// does every line the session types, so whatever bash echoes of them (set -x traces of the
// typed line, set -v listings of PROMPT_COMMAND) is recognised and left out of the transcript.
//
// Markers. PROMPT_COMMAND runs `{ __sk_N_p || { builtin source RC && __sk_N_p; }; } 2>/dev/null`
// before every prompt: the group's redirection keeps set -x from tracing it; it is exported, so
// a bash that replaces the session's (exec bash) or runs inside it, which lacks __sk_N_p, reads
// this file first; and __sk_N_p prints
//
//	ESC ] 6973 ; <nonce> ; <status> ; <flags> ; <command number> ; <instance> ; <printf %q of $PWD> BEL
//
// where the instance names the bash that printed it ($$ and a random number chosen as it read
// this file).
// to /dev/tty (so `exec >file` in the session does not swallow it). The status is $? of the
// command; %q output has no raw control character, so the marker cannot be cut by the cwd.
// PS1, PS2 and PS0 are kept empty: the output shows no prompt text.
//
// Commands. Each Run writes the command to the session's command file (one private file,
// rewritten in place while no command runs) and
// types `^U { __sk_N_b SEQ; } 2>/dev/null; builtin source FILE; { __sk_N_a; } 2>/dev/null`:
// ^U clears any half-typed input, __sk_N_b records the command's number for its marker (so a
// late marker of an earlier line can never end a later command) and keeps $?,
// sourcing keeps the shell's state (cd, export, functions, declare) exactly as typing would,
// avoids the terminal's line-length limit, and gives the command its own frame to leave.
// __sk_N_a puts the session's hook back in front of PROMPT_COMMAND when the command replaced it
// (flag P), and keeps $?.
//
// set -e. An interactive bash with errexit exits at the first failing command, which would end
// the session (OpenHands #10550). The ERR trap (inherited by functions through set -E, which
// the session keeps on) runs exactly where errexit would end the shell; when errexit is on (or
// such an unwinding has begun) it returns from the current function or sourced file, so the
// command stops at its first failure as a script would, and at the top level it turns errexit
// off just long enough to get back to the prompt, where __sk_N_p turns it on again (flag E).
// In subshells and command substitutions it does nothing: bash's own errexit ends them, as in
// a script. Bash itself exits at an error it reports while set -e is on (an unbound variable
// with set -u, a bad substitution, ${x:?}: report_error calls exit_shell, no ERR trap runs),
// and when a command replaced this ERR trap. The EXIT trap catches both: in the middle of a
// command, with set -e on, a failure status, and neither exit nor logout (functions that say
// they were called) nor Close (a file in the session's directory) asking for it, it dumps the
// shell's state (variables with their attributes, functions, aliases, shopt and set options,
// traps) into the environment and execs a new bash with this rc file, which restores it and
// prints the interrupted command's marker with its status and flag R. The pid, terminal, cwd,
// umask and limits stay; background jobs run on but are no longer the new shell's jobs. A
// command that replaces the EXIT trap loses this: the Step then says exited, with a note when
// errexit was on (flag e: errexit is on at this prompt).

// markerPrefix starts every marker; the nonce follows.
const markerPrefix = "\x1b]6973;"

// markerMax bounds a marker's length (PATH_MAX quoted by %q, with room to spare); a longer
// sequence is not a marker.
const markerMax = 64 << 10

// rcFile is the rc file of a session with this nonce.
func rcFile(nonce, rc, dir string) string {
	n := "__sk_" + nonce
	var b strings.Builder
	w := func(lines ...string) {
		for _, l := range lines {
			b.WriteString(strings.ReplaceAll(l, "__N__", n+"_"))
			b.WriteByte('\n')
		}
	}
	w(
		"# subkit shell session setup (generated)",
		"set +o xtrace +o verbose +o errexit +o nounset +o history +o emacs +o vi 2>/dev/null",
		"unset BASH_ENV ENV HISTFILE 2>/dev/null",
		// A UTF-8 locale when none is set (bash takes it at the assignment).
		"if [[ -z ${LC_ALL-}${LC_CTYPE-}${LANG-} ]]; then",
		"  if [[ $OSTYPE == darwin* ]]; then export LC_CTYPE=UTF-8; else export LANG=C.UTF-8; fi",
		"fi",
		"PS1='' PS2='' PS0=''",
		// The hook: in a bash that lacks the session's functions (exec bash, a nested bash,
		// which get PROMPT_COMMAND from the environment) it sources this file first.
		"__N__d="+shellQuote(dir)+" __N__rc="+shellQuote(rc)+" __N__cf="+shellQuote(filepath.Join(dir, "command")),
		"__N__pc="+shellQuote(promptCommand(nonce, rc)),
		// This bash's instance, in every marker: a marker of another instance means the
		// shell that reads the commands changed.
		"__N__i=$$.$RANDOM$RANDOM __N__f=N",
		// The ERR trap's test: 0 means "return from this frame".
		"__N__e() {",
		"  if (( ${BASHPID:-$$} != $$ || BASH_SUBSHELL > 0 )); then return 1; fi",
		"  if [[ $- != *e* && -z ${__N__u-} ]]; then return 1; fi",
		"  if (( ${#FUNCNAME[@]} > 1 )); then __N__u=1; return 0; fi",
		"  set +e; __N__ee=1; __N__u=; return 1",
		"}",
		"__N__p() {",
		"  local s=$? q= f=${__N__f-} c=${__N__c-}",
		"  if [[ -n ${__N__s-} ]]; then s=$__N__s; __N__s=; fi",
		"  __N__f= __N__c= __N__r=",
		"  if [[ -n ${__N__T-} ]]; then __N__T=; set +T; fi",
		"  if [[ -n ${__N__ee-} ]]; then __N__ee=; set -e; f+=E; fi",
		"  __N__u=",
		"  if [[ -n ${PS1-}${PS2-}${PS0-} ]]; then PS1='' PS2='' PS0=''; f+=S; fi",
		"  if [[ $- == *e* ]]; then f+=e; fi",
		"  if [[ $- == *v* ]]; then f+=v; fi",
		"  builtin printf -v q %q \"${PWD-}\"",
		"  { builtin printf '\\033]6973;"+nonce+";%d;%s;%s;%s;%s\\007' \"$s\" \"$f\" \"$c\" \"$__N__i\" \"$q\" >/dev/tty; } 2>/dev/null ||",
		"    builtin printf '\\033]6973;"+nonce+";%d;%s;%s;%s;%s\\007' \"$s\" \"$f\" \"$c\" \"$__N__i\" \"$q\"",
		"  return 0",
		"}",
		// Before a command: its number, for its marker; $? kept (but never a failure
		// under set -e, which would stop the typed line).
		"__N__b() {",
		"  local s=$?",
		"  __N__c=$1 __N__r=1",
		"  if [[ -n ${__N__g-} && $- != *T* ]]; then __N__T=1; set -T; fi",
		"  if [[ $- == *e* ]]; then return 0; fi",
		"  return $s",
		"}",
		"__N__a() {",
		"  local s=$?",
		"  if [[ $- != *E* ]]; then set -E; fi",
		"  if [[ ${PROMPT_COMMAND-} != \"$__N__pc\"* ]]; then",
		"    if (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )); then",
		"      PROMPT_COMMAND=(\"$__N__pc\" \"${PROMPT_COMMAND[@]}\")",
		"    else",
		"      PROMPT_COMMAND=\"$__N__pc\"$'\\n'\"${PROMPT_COMMAND-}\"",
		"    fi",
		"    __N__f+=P",
		"  fi",
		"  return $s",
		"}",
		// The EXIT trap: bash exits at once at an error it reports while set -e is on (an
		// unbound variable under set -u, ${x:?}, a bad substitution: report_error calls
		// exit_shell), or when a command replaced the ERR trap. In the middle of a command,
		// with set -e on, a failure status and no exit, logout or Close asked for, the
		// shell's state goes into the environment and a new bash takes its place (exec: the
		// same pid, terminal and cwd), which restores it at the end of this file and prints
		// the marker of the interrupted command with its status.
		"__N__v() {",
		"  local n",
		"  builtin printf '__N__c=%q __N__s=%q __N__f=R __N__g=%q __N__T=%q\\n' \"${__N__c-}\" \"$1\" \"${__N__g-}\" \"${__N__T-}\"",
		"  for n in $(builtin compgen -v); do",
		"    case $n in",
		"      __sk_*|BASH|BASHOPTS|BASHPID|BASH_*|EUID|PPID|SHELLOPTS|UID|FUNCNAME|GROUPS|DIRSTACK|HISTCMD|LINENO|RANDOM|SRANDOM|SECONDS|EPOCHREALTIME|EPOCHSECONDS|PIPESTATUS|COLUMNS|LINES|PS0|PS1|PS2|PROMPT_COMMAND|_|SHLVL|PWD|HISTFILE|COMP_WORDBREAKS|OPTIND|OPTERR) continue;;",
		"    esac",
		"    builtin declare -p \"$n\" 2>/dev/null",
		"  done",
		"  builtin declare -f",
		"  builtin alias -p",
		"  builtin shopt -p",
		"  builtin trap -p",
		"  builtin set +o",
		"  if [[ $2 == *e* ]]; then builtin printf 'set -e\\n'; fi", // a command substitution drops -e
		"}",
		// __N__x returns 0 when the shell is to be replaced; the trap then execs outside the
		// group whose 2>/dev/null keeps its own traces quiet, so the new bash gets the
		// shell's stderr.
		// Otherwise the shell is about to exit: a marker with flag X says so with its
		// status, so the session need not wait for the terminal to drain (a background job
		// may hold it).
		"__N__x() {",
		"  local s=$? o=$-",
		"  set +e",
		"  (( ${BASHPID:-$$} == $$ )) || return 1",
		"  if [[ -n ${__N__r-} && $o == *e* && $s != 0 && -z ${__N__X-} && ! -e $__N__d/closing ]]; then",
		"    if __N__S=$(__N__v \"$s\" \"$o\"); then export __N__S; set +xv; return 0; fi",
		"  fi",
		"  __N__f+=X __N__s=$s",
		"  __N__p",
		"  return 1",
		"}",
		// exit and logout say they were asked for: the EXIT trap cannot tell otherwise
		// (BASH_COMMAND names the sourced file, not the exit in it).
		"exit() { __N__X=1; builtin exit \"$@\"; }",
		"logout() { __N__X=1; builtin logout \"$@\"; }",
		"PROMPT_COMMAND=$__N__pc; export PROMPT_COMMAND",
		"set -E",
		"trap '{ __N__e && return; } 2>/dev/null' ERR",
		"trap '{ __N__x; } 2>/dev/null && builtin exec \"${BASH:-bash}\" --noprofile --rcfile \"$__N__rc\" --noediting -i' EXIT",
		// A DEBUG trap the command sets (trap, a function as exit is) is stored as given
		// (__N__g) and installed wrapped (__N__w), so that it skips the session's own commands
		// (they come from this file, or from the line the session types, which names the
		// nonce; every command the model runs comes from the command file). A sourced file runs
		// no DEBUG trap unless functrace is on, so __N__b turns it on for a command while a
		// DEBUG trap is set (__N__T), and __N__p off again; the wrapper then runs the action
		// only at the command's top level, as bash does for a line typed at its prompt.
		// Limits: $- shows T during such a command, and a set -T the command itself runs
		// then is undone at the prompt; a failing command fires it twice, as bash does when
		// an ERR trap (the session's) runs, whose commands it reports as the failed one.
		// trap -p and trap show the action as given; builtin trap bypasses all of this.
		// The action sees the $? of the command before (__N__q), restored by __N__z in an if
		// condition, where a failure neither fires the ERR trap nor ends a set -e shell.
		"__N__z() { return \"$1\"; }",
		"__N__w='__N__q=$?; [[ -z ${BASH_SOURCE[0]-} || ${BASH_SOURCE[0]} == \"$__N__rc\" || $BASH_COMMAND == *__N__* || ${FUNCNAME[*]-} == *__N__* || ( -n ${__N__T-} && -n ${FUNCNAME[0]+f} ) ]] || if __N__z \"$__N__q\"; then builtin eval \"$__N__g\"; else builtin eval \"$__N__g\"; fi'",
		"trap() {",
		"  local a=(\"$@\") s d= o r=0 x=()",
		"  if [[ ${a[0]-} == -- ]]; then a=(\"${a[@]:1}\"); fi",
		"  if (( ${#a[@]} < 2 )) || [[ ${a[0]} == -[lpP] ]]; then",
		"    if [[ ${#a[@]} == 1 && ${a[0]^^} == ?(SIG)DEBUG ]]; then __N__g=; fi",
		"    if [[ -z ${__N__g-} || ( ${#a[@]} -gt 0 && ${a[0]} != -[pP] ) ]]; then builtin trap \"$@\"; return; fi",
		"    o=$(builtin trap \"$@\") || r=$?",
		"    o=${o//\"'${__N__w//\\'/\\'\\\\\\'\\'}'\"/\"'${__N__g//\\'/\\'\\\\\\'\\'}'\"}",
		"    o=${o//\"$__N__w\"/\"$__N__g\"}",
		"    if [[ -n $o ]]; then builtin printf '%s\\n' \"$o\"; fi",
		"    return $r",
		"  fi",
		"  for s in \"${a[@]:1}\"; do",
		"    if [[ ${s^^} == ?(SIG)DEBUG ]]; then d=1; else x+=(\"$s\"); fi",
		"  done",
		"  if [[ -z $d ]]; then builtin trap -- \"${a[@]}\"; return; fi",
		"  if (( ${#x[@]} )); then builtin trap -- \"${a[0]}\" \"${x[@]}\" || r=$?; fi",
		"  case ${a[0]} in",
		"    -) __N__g=; builtin trap - DEBUG ;;",
		"    '') __N__g=; builtin trap '' DEBUG ;;",
		"    \"$__N__w\") builtin trap -- \"$__N__w\" DEBUG ;;", // a state dump restored
		"    *) __N__g=${a[0]}; builtin trap -- \"$__N__w\" DEBUG ;;",
		"  esac",
		"  return $r",
		"}",
		// A bash started by __N__x: restore the state of the one it replaced (last, as it
		// may turn set -e on).
		"if [[ -n ${__N__S-} ]]; then",
		"  __N__t=$__N__S; unset __N__S",
		"  builtin eval \"$__N__t\" 2>/dev/null; __N__t=",
		"fi",
	)
	return b.String()
}

// promptCommand is the session's PROMPT_COMMAND: its hook, and in a bash without it (exec
// bash, a nested bash) the rc file first.
func promptCommand(nonce, rc string) string {
	n := "__sk_" + nonce + "_p"
	return "{ " + n + " || { builtin source " + shellQuote(rc) + " && " + n + "; }; } 2>/dev/null"
}

// typedLine is what the session types to run command number seq from the command file
// (named by $__sk_N_cf: the line stays short, under a terminal's width, so that a nested
// bash's line editor does not scroll it).
func typedLine(nonce string, seq int) []byte {
	n := "__sk_" + nonce
	return []byte("\x15{ " + n + "_b " + strconv.Itoa(seq) + "; } 2>/dev/null; builtin source \"$" + n + "_cf\"" +
		"; { " + n + "_a; } 2>/dev/null\n")
}

// shellQuote quotes s for bash: single-quoted, each quote inside closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// marker is one prompt marker: the shell is back at its prompt.
type marker struct {
	status int
	flags  string
	seq    int    // the number of the command that ended, 0 for a line typed at the prompt
	inst   string // the bash that printed it (pid and a random number, set when it read the rc file)
	cwd    string
	cwdOK  bool // the cwd field decoded
}

// parseMarker parses the body of a marker after its nonce and ';', up to BEL excluded:
// status;flags;seq;instance;cwd.
func parseMarker(fields string) (marker, bool) {
	parts := strings.SplitN(fields, ";", 5)
	if len(parts) != 5 {
		return marker{}, false
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil {
		return marker{}, false
	}
	m := marker{status: n, flags: parts[1], inst: parts[3]}
	if parts[2] != "" {
		if m.seq, err = strconv.Atoi(parts[2]); err != nil || m.seq <= 0 {
			return marker{}, false
		}
	}
	m.cwd, m.cwdOK = unquote(parts[4])
	return m, true
}
