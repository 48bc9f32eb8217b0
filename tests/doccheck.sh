#!/usr/bin/env bash
# Check the docs against the tree: every repository path they name exists, and every function,
# constant or type they say is in a file occurs in that file.
#
#   tests/doccheck.sh               check README.md, docs/*.md and bench/README.md (`make check-docs`)
#   tests/doccheck.sh FILE.md ...   check those files instead
#
# Run from anywhere; paths are taken from the repository root. Bash, grep, sed and awk only
# (no Python: a fresh Debian machine may not have it). Prints one line per stale reference,
# `file:line: ...`, and exits 1 if there was any.
#
# What counts as a path (in prose, backticks, code blocks and link text alike):
#   - a word starting with a top-level folder of the repository: abi/ bench/ docs/ drivers/
#     fs/ kernel/ tests/ tools/ user-tests/ mk/ .ci/ (e.g. `kernel/src/fs/path.rs`, fs/kvdb);
#   - a word starting with a folder of kernel/src: arch/ mm/ task/ trap/ syscall/ ipc/ (the
#     kernel's own docs name `mm/window.rs` that way), checked under kernel/src;
#   - a markdown link target, [text](target), taken relative to the file it is in; its
#     #section, if any, must be a heading of that file (GitHub's anchor for it).
# A path is found if it exists from the repository root, from the folder of the doc that names
# it, or (for the kernel-relative folders, and fs/ and drivers/ too) from kernel/src. `*` and
# `{a,b}` in a path are expanded and each result must exist. Not checked: words preceded by `/`
# or `.` (absolute guest paths such as /usr/pjdfstest/tests/conf, ../shared/pjdfstest, URLs),
# build/ and target/ (outputs of the build), placeholders the reader fills in (a component NAME,
# DIR, NN, FILE, PATH, IMAGE or MNT, with or without an extension: user-tests/src/bin/NAME.rs),
# and links to http(s): or mailto:.
#
# What counts as "named as being in a file" (a paragraph is joined first, so it may wrap):
#   `IDENT` in `PATH`      `IDENT` in PATH      `IDENT` (`PATH`)      `IDENT` (anything but parentheses or backticks, `PATH`
# where IDENT is a Rust/C/shell name, possibly qualified (`Db::barrier`, `task::wait_child`,
# `sys_openat()`), and PATH is a file or folder as above. The last component of IDENT
# (`barrier`, `wait_child`) must occur as a whole word in the file (in any file of the folder).

set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CALLER_DIR=$PWD
cd "$ROOT" || exit 2

if [ "$#" -gt 0 ]; then
    files=()
    for f in "$@"; do
        # a file named from the caller's directory, shown from the root when it lies inside
        case $f in /*) ;; *) f=$CALLER_DIR/$f ;; esac
        files+=("${f#"$ROOT"/}")
    done
else
    files=(README.md docs/*.md)
    # the list of benchmarks, once it exists
    [ -f bench/README.md ] && files+=(bench/README.md)
fi

TOP='\.ci|abi|bench|docs|drivers|fs|kernel|tests|tools|user-tests|mk|arch|mm|task|trap|syscall|ipc'
errors=0

# Does PATH (as written in DOC) exist? Expands * and {,}.
path_exists() {
    local p=$1 doc=$2 base cand
    p=${p%/}
    [ -z "$p" ] && return 0
    for base in "." "$(dirname "$doc")" "kernel/src"; do
        # kernel/src only for the folders that live there
        if [ "$base" = kernel/src ]; then
            case $p in arch/*|mm/*|task/*|trap/*|syscall/*|ipc/*|fs/*|drivers/*|arch|mm|task|trap|syscall|ipc) ;; *) continue ;; esac
        fi
        if [[ $p == *[\*\{]* ]]; then
            local all=1 any=0 x
            # brace expansion of a string of [A-Za-z0-9_./*{},+-] only: safe to eval
            for cand in $(eval "echo $p"); do
                any=1
                if ! compgen -G "$base/$cand" >/dev/null; then all=0; fi
            done
            [ "$any" = 1 ] && [ "$all" = 1 ] && return 0
        else
            [ -e "$base/$p" ] && return 0
        fi
    done
    return 1
}

# The anchors GitHub gives a markdown file's headings: lower case, backticks and punctuation
# dropped, each space a hyphen ("## Kernel (`kernel/src`)" is #kernel-kernelsrc).
slugs() {
    grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//; s/ +#+ *$//' | tr 'A-Z' 'a-z' |
        LC_ALL=C sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

report() {
    echo "$1"
    errors=$((errors + 1))
}

for doc in "${files[@]}"; do
    [ -f "$doc" ] || { report "$doc: no such file"; continue; }

    # 1. Paths named in the text.
    while IFS=: read -r line word; do
        # strip the character before the path and trailing punctuation
        word=$(printf '%s' "$word" | sed -E 's/^[^A-Za-z.]//; s/[.,;:)`'"'"'"]+$//')
        case $word in build/*|target/*|'') continue ;; esac
        # a placeholder the reader fills in: user-tests/src/bin/NAME.rs, tests/DIR/NN.t
        if printf '%s\n' "$word" | grep -qE '(^|/)(NAME|DIR|NN|FILE|PATH|IMAGE|MNT)(\.[a-z]+)?(/|$)'; then
            continue
        fi
        # a bare folder name in prose ("the fs/ crates", "mm/") is fine if the folder exists
        path_exists "$word" "$doc" || report "$doc:$line: missing path $word"
    done < <(grep -noE "(^|[^A-Za-z0-9_./~\$-])($TOP)/[A-Za-z0-9_./*{},+-]*" "$doc" |
        sed -E 's/^([0-9]+:)[^A-Za-z.]/\1/' | sort -t: -k1,1n -k2 -u)

    # 2. Link targets, relative to the doc; a #section of a markdown file must be one of its
    #    headings, as GitHub names them (see slugs).
    while IFS=: read -r line target; do
        target=${target#](}
        case $target in http:*|https:*|mailto:*) continue ;; esac
        anchor=
        case $target in *'#'*) anchor=${target#*#}; target=${target%%#*} ;; esac
        case $target in build/*|target/*|../build/*|../target/*) continue ;; esac
        if [ -z "$target" ]; then
            file=$doc
        else
            file=$(dirname "$doc")/$target
            [ -e "$file" ] || { report "$doc:$line: broken link $target"; continue; }
        fi
        if [ -n "$anchor" ] && [[ $file == *.md ]] && [ -f "$file" ]; then
            slugs "$file" | grep -qxF -- "$anchor" ||
                report "$doc:$line: no section #$anchor in ${target:-$doc}"
        fi
    done < <(grep -noE '\]\([^)[:space:]]+' "$doc")

    # 3. Names said to be in a file.
    while IFS=$'\t' read -r line ident file; do
        file=${file%/}
        if ! path_exists "$file" "$doc"; then
            continue # reported as a missing path above
        fi
        name=${ident%()}
        name=${name##*::}
        name=${name%!}
        found=0
        for base in "." "$(dirname "$doc")" "kernel/src"; do
            if [ -e "$base/$file" ]; then
                if grep -rqw -- "$name" "$base/$file" 2>/dev/null; then found=1; fi
                break
            fi
        done
        [ "$found" = 1 ] || report "$doc:$line: \`$ident\` not found in $file"
    done < <(awk -v top="$TOP" '
        # A paragraph is one string, its line breaks kept as \001 so a match can name its line.
        function scan(s, startline,   re, m, before, nl, nlm, off, ident, path) {
            re = "`[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*(\\(\\)|!)?`([ \001]+in[ \001]+|[ \001]*\\([^()`]*)`?(" top ")/[A-Za-z0-9_./-]*"
            off = 0
            while (match(s, re)) {
                before = substr(s, 1, RSTART - 1)
                nl = gsub(/\001/, "", before)
                m = substr(s, RSTART, RLENGTH)
                nlm = gsub(/\001/, " ", m)
                ident = m; sub(/^`/, "", ident); sub(/`.*/, "", ident)
                path = m; sub(/^`[^`]*`( +in +| *\([^()`]*)`?/, "", path)
                sub(/[.]+$/, "", path)
                printf "%d\t%s\t%s\n", startline + off + nl, ident, path
                off += nl + nlm
                s = substr(s, RSTART + RLENGTH)
            }
        }
        /^[[:space:]]*$/ { if (para != "") scan(para, start); para = ""; next }
        { if (para == "") { para = $0; start = NR } else para = para "\001" $0 }
        END { if (para != "") scan(para, start) }
    ' "$doc")
done

# The module tables of ARCHITECTURE.md: a row whose first cell is a kernel folder (`syscall/`,
# `task/`, ...) and whose text says it holds files "one file each" must name every file of that
# folder (in backticks, with or without .rs), so a new system-call module cannot go unlisted.
arch_doc=docs/ARCHITECTURE.md
if [ -f "$arch_doc" ] && { [ "$#" -eq 0 ] || [[ " $* " == *" $arch_doc "* ]]; }; then
    while IFS= read -r row; do
        lineno=${row%%:*}
        text=${row#*:}
        dir=$(printf '%s' "$text" | sed -n 's/^| `\([a-z_]*\)\/` |.*/\1/p')
        [ -n "$dir" ] && [ -d "kernel/src/$dir" ] || continue
        for f in kernel/src/"$dir"/*.rs; do
            name=$(basename "$f" .rs)
            [ "$name" = mod ] && continue
            case $text in
            *"\`$name\`"* | *"\`$name.rs\`"* | *"\`$dir/$name.rs\`"*) ;;
            *)
                echo "$arch_doc:$lineno: the \`$dir/\` row does not name $f"
                errors=$((errors + 1))
                ;;
            esac
        done
    done < <(grep -n '^| `[a-z_]*/` |.*one file each' "$arch_doc")
fi

if [ "$errors" -gt 0 ]; then
    echo "doccheck: $errors stale reference(s) in ${files[*]}"
    exit 1
fi
echo "doccheck: ${#files[@]} files, every named path and name found"
