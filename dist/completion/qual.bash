# bash completion for qual's programs: qualctl, quald, qual-run, qual-judge.
# Installed under each program's name in bash-completion's completions
# folder (cmake/install.cmake); sourcing it once defines all four.
#
# The options come from the programs themselves: each completion runs the
# program's --help (qualctl's COMMAND --help) and takes the options it
# defines, so that a new option completes without touching this file. An
# option's value is completed by its placeholder in the help (FILE, PATH:
# files; DIR: folders; LIB: *.so* libraries; NAME of --compile-user: users)
# or, for a few, by the values the help names. qualctl completes job ids from
# `qualctl list --json` when quald answers, and nothing otherwise.
# tests/completion.cmake drives these functions.

# Prints "--option" or "--option PLACEHOLDER", one a line, for every option
# that help text $1 defines: an indented line starting with options (up to
# two spaces), then [--option ARG] or | --option ARG in a usage line; an
# option's first definition gives its placeholder.
_qual_options()
{
	printf '%s\n' "$1" | awk '
	function take(s,   n, i, w) {
		n = split(s, w, / +/)
		if (w[1] !~ /^--[a-z0-9]/)
			return
		sub(/=.*/, "", w[1])
		if (seen[w[1]]++)
			return
		print (n > 1 && w[2] ~ /^[A-Z]/) ? w[1] " " w[2] : w[1]
	}
	/^ +(-[a-zA-Z], )?--[a-z0-9]/ {
		col = $0
		sub(/^ +(-[a-zA-Z], )?/, "", col)
		sub(/  .*/, "", col)
		n = split(col, items, /, /)
		for (i = 1; i <= n; i++)
			take(items[i])
	}
	{
		s = $0
		while (match(s, /[[|] ?--[a-z0-9][a-z0-9-]*( [A-Z][^] |]*)?/)) {
			t = substr(s, RSTART, RLENGTH)
			sub(/^[[|] ?/, "", t)
			usage[++nusage] = t
			s = substr(s, RSTART + RLENGTH)
		}
	}
	END {
		for (i = 1; i <= nusage; i++)
			take(usage[i])
	}'
}

# The help text of "$@" --help, on stdout and stderr alike.
_qual_help()
{
	"$@" --help 2>&1
}

# Completes ${cur} as a compiler library: *.so and *.so.N files, and folders.
_qual_libraries()
{
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X '!*.so' -- "$cur")
		$(compgen -f -X '!*.so.*' -- "$cur"))
}

_qual_files()
{
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -f -- "$cur"))
}

_qual_dirs()
{
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -d -- "$cur"))
}

# The job ids quald lists (newest first), asked through the socket or TCP
# options on the command line; nothing when quald does not answer within
# two seconds.
_qual_job_ids()
{
	local i conn=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--socket | --tcp | --token-file)
			conn+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}") ;;
		--socket=* | --tcp=* | --token-file=*)
			conn+=("${COMP_WORDS[i]}") ;;
		esac
	done
	"$1" "${conn[@]}" --timeout 2 list --limit 1000 --json 2>/dev/null |
		grep -o '"job": *"[^"]*"' | cut -d'"' -f4
}

# Completes the value of option $prev, given its placeholder $1, from the
# help of program $2. Returns 1 when $prev takes no value.
_qual_option_value()
{
	local meta=$1 program=$2
	case $prev in
	--format) COMPREPLY=($(compgen -W 'table json' -- "$cur")); return ;;
	--gate-slower | --gate-faster)
		COMPREPLY=($(compgen -W 'beyond significant' -- "$cur")); return ;;
	--undecided) COMPREPLY=($(compgen -W 'pass regression' -- "$cur")); return ;;
	--mode) COMPREPLY=($(compgen -W 'default cu wgp' -- "$cur")); return ;;
	--devices) COMPREPLY=($(compgen -W 'auto' -- "$cur")); return ;;
	--compile-user) COMPREPLY=($(compgen -u -- "$cur")); return ;;
	--group) COMPREPLY=($(compgen -g -- "$cur")); return ;;
	--after) COMPREPLY=($(compgen -W "$(_qual_job_ids "$program")" -- "$cur")); return ;;
	--case)
		# qual-run lists the cases; qualctl's come from the qual-run beside it.
		local run=$program
		[[ $run == *qualctl ]] && run=${run%qualctl}qual-run
		command -v "$run" >/dev/null 2>&1 || run=qual-run
		COMPREPLY=($(compgen -W "$("$run" --list 2>/dev/null)" -- "$cur"))
		return ;;
	esac
	case $meta in
	"") return 1 ;;
	LIB*) _qual_libraries ;;
	DIR*) _qual_dirs ;;
	FILE* | PATH*) _qual_files ;;
	*) COMPREPLY=() ;;
	esac
}

# Completes an option or an option's value of a program whose options
# help text $1 defines. Returns 1 when the word is neither (an operand).
_qual_complete_options()
{
	local opts=$1 program=$2 meta
	if [[ $prev == --* ]]; then
		meta=$(printf '%s\n' "$opts" | awk -v o="$prev" '$1 == o { print $2; exit }')
		if printf '%s\n' "$opts" | awk -v o="$prev" '$1 == o { f = 1 } END { exit !f }'; then
			_qual_option_value "$meta" "$program" && return 0
		fi
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(printf '%s\n' "$opts" | cut -d' ' -f1)" -- "$cur"))
		return 0
	fi
	return 1
}

_qual_program()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local program=${COMP_WORDS[0]} opts
	COMPREPLY=()
	opts=$(_qual_options "$(_qual_help "$program")")
	_qual_complete_options "$opts" "$program" && return 0
	case ${program##*/} in
	qual-run) _qual_libraries ;;
	qual-judge) _qual_files ;;
	esac
	return 0
}

_qualctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local program=${COMP_WORDS[0]} command="" commands opts i nth=0
	COMPREPLY=()
	commands=$("$program" help 2>/dev/null |
		awk -v p="${program##*/}" '$1 == p && $2 ~ /^[a-z]/ { print $2 }')
	# The command is the first word that is neither an option nor the value
	# of the global options that take one; nth counts the operands after it.
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--socket | --tcp | --token-file | --timeout) ((i++)) ;;
		-*) ;;
		*)
			if [[ -z $command ]]; then
				command=${COMP_WORDS[i]}
			elif [[ ${COMP_WORDS[i - 1]} != --* ]] ||
				! printf '%s\n' "$opts" | grep -q -- "^${COMP_WORDS[i - 1]} "; then
				((nth++))
			fi ;;
		esac
		[[ -n $command && -z $opts ]] &&
			opts=$(_qual_options "$(_qual_help "$program" "$command")")
	done
	if [[ -z $command ]]; then
		# The global options: those of the first usage line.
		opts=$(_qual_options "$(_qual_help "$program" | sed '/^$/q')")
		_qual_complete_options "$opts" "$program" && return 0
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		return 0
	fi
	_qual_complete_options "$opts" "$program" && return 0
	case $command in
	submit) ((nth < 2)) && _qual_libraries ;;
	calibrate) ((nth < 1)) && _qual_libraries ;;
	wait | show | cancel | explain)
		((nth < 1)) && COMPREPLY=($(compgen -W "$(_qual_job_ids "$program")" -- "$cur")) ;;
	quarantine) ((nth < 1)) && COMPREPLY=($(compgen -W 'list clear' -- "$cur")) ;;
	judge) _qual_files ;;
	help) ((nth < 1)) && COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
	esac
	return 0
}

complete -F _qualctl qualctl
complete -F _qual_program quald qual-run qual-judge
