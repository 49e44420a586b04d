#!/bin/bash
# test_completion.sh [DIR [KEY_TYPES]]: the bash completions in DIR
# (default: the source tree's completions/), driven as bash drives them on
# a TAB: the command line split into COMP_WORDS at COMP_WORDBREAKS, then the
# function that `complete -p CMD` names, and its COMPREPLY checked.
# KEY_TYPES (tests/doc's key_types, as meson passes it) prints fs/format/schema.c's
# key table: `lsmfs-inspect DISK keys` must offer its letters, no more, no
# fewer (without it that check is skipped, said so).
# Exit status: 0 pass, 1 fail, 77 skip (no bash-completion installed).

bc=/usr/share/bash-completion/bash_completion
if [[ ! -r $bc ]]; then
    echo "SKIP: $bc absent (apt-get install bash-completion)"
    exit 77
fi
dir=${1:-$(dirname "${BASH_SOURCE[0]}")/../../completions}
key_letters=()
if [[ $2 ]]; then
    mapfile -t key_letters < <("$2" | cut -f1) && ((${#key_letters[@]})) ||
        { echo "not ok - $2: no key table"; exit 1; }
fi
cmds=(lsmfs mkfs.lsmfs fsck.lsmfs lsmfs-inspect lsmfs-disk lsmfs-bench)

# shellcheck source=/dev/null
. "$bc" || exit 1
failed=0
for c in "${cmds[@]}"; do
    if [[ ! -r $dir/$c ]]; then
        echo "not ok - $dir/$c: missing"
        failed=1
        continue
    fi
    # shellcheck source=/dev/null
    . "$dir/$c" || { echo "not ok - $dir/$c: does not source"; failed=1; }
done

# Outside a real completion the builtin only complains: keep what the
# functions ask for instead (nospace, filenames).
# shellcheck disable=SC2317 # called by the completion functions
compopt() { opts+=" $*"; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{disk0,disk1,data,m0,m1,out} "$tmp/spa ce"
: >"$tmp/disk-file" # a file: never offered where a directory is wanted
cat >"$tmp/mounts" <<'EOF'
/d0:/d1 /mnt/lsmfs fuse.lsmfs rw,nosuid,nodev,relatime 0 0
/e0 /mnt/with\040space fuse.lsmfs rw 0 0
sshfs /mnt/other fuse.sshfs rw 0 0
/f0 /mnt/a:b fuse.lsmfs rw 0 0
EOF
_lsmfs_disk_mounts=$tmp/mounts # lsmfs-disk reads this, not /proc/self/mounts
cd "$tmp" || exit 1

# tab LINE: split LINE (the cursor at its end) as bash does, call the
# function registered for its command; leaves the answer in COMPREPLY and
# the compopt options in $opts.
tab() {
    local line=$1 c w="" kind="" i spec
    COMP_WORDS=()
    for ((i = 0; i < ${#line}; i++)); do
        c=${line:i:1}
        if [[ $c == [[:space:]] ]]; then
            [[ $kind ]] && COMP_WORDS+=("$w")
            w="" kind=""
        elif [[ $COMP_WORDBREAKS == *"$c"* ]]; then # '=', ':'... a word of their own
            [[ $kind == word ]] && COMP_WORDS+=("$w") && w=""
            w+=$c kind=brk
        else
            [[ $kind == brk ]] && COMP_WORDS+=("$w") && w=""
            w+=$c kind=word
        fi
    done
    COMP_WORDS+=("$w") # the word being completed, maybe empty
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line COMP_POINT=${#line}
    COMPREPLY=() opts=""
    spec=$(complete -p "${COMP_WORDS[0]}" 2>/dev/null)
    [[ $spec =~ -F\ ([^ ]+) ]] || { COMPREPLY=("<no completion for ${COMP_WORDS[0]}>"); return; }
    "${BASH_REMATCH[1]}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" \
        "${COMP_WORDS[COMP_CWORD - 1]}"
}

report() { # report OK DESCRIPTION
    if (($1)); then
        echo "ok - $2"
    else
        echo "not ok - $2"
        echo "#   got:${COMPREPLY[*]/#/ [}${COMPREPLY:+]} (compopt:${opts:- none})"
        failed=1
    fi
}
has() { # has LINE WORD...: each WORD among the completions of LINE
    local line=$1 w x ok=1
    tab "$line"
    shift
    for w; do
        for x in "${COMPREPLY[@]}"; do [[ $x == "$w" ]] && continue 2; done
        ok=0
    done
    report $ok "'$line<TAB>' offers $*"
}
lacks() { # lacks LINE WORD...: no WORD among the completions of LINE
    local line=$1 w x ok=1
    tab "$line"
    shift
    for w; do
        for x in "${COMPREPLY[@]}"; do [[ $x == "$w" ]] && ok=0; done
    done
    report $ok "'$line<TAB>' does not offer $*"
}
only() { # only LINE WORD...: the completions of LINE are the WORDs (any order)
    local line=$1
    tab "$line"
    shift
    local got want
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort)
    want=$(printf '%s\n' "$@" | sort)
    (($#)) || want=""
    ((${#COMPREPLY[@]})) || got=""
    [[ $got == "$want" ]]
    report $((!$?)) "'$line<TAB>' offers ${*:-nothing}${*:+ and nothing else}"
}
nospace() { # nospace LINE: the completion asks for no space after it
    tab "$1"
    [[ $opts == *"-o nospace"* ]]
    report $((!$?)) "'$1<TAB>' adds no space"
}

for c in "${cmds[@]}"; do
    [[ $(complete -p "$c" 2>/dev/null) == *" $c" ]]
    report $((!$?)) "$c/$c registers a completion for $c"
    has "$c -" -h --help -V --version
done

# lsmfs [-f] [-d] [-o OPTIONS] DISK[:DISK...] MOUNTPOINT
has 'lsmfs -' -f -d -o
only 'lsmfs -o inode_' inode_cache=
nospace 'lsmfs -o inode_'
only 'lsmfs -o ro,no_' ro,no_writeback ro,no_direct ro,no_dircache
has 'lsmfs -o ' ro degraded force_degraded allow_other attr_timeout= entry_timeout= dircache_age= selinux_xattr= cache_mib= \
    inode_cache= log_delay_ms= spin_us= no_writeback no_direct no_dircache bdi_max_ratio= readahead_kb=
only 'lsmfs -o selinux_xattr=' auto off on
only 'lsmfs -o ro,selinux_xattr=o' off on
# after a '=' readline replaces only what follows it
only 'lsmfs -o cache_mib=64,inode_' 64,inode_cache=
only 'lsmfs -o attr_timeout=' # a number
only 'lsmfs di' disk0 disk1
only 'lsmfs disk0:di' disk0 disk1 # after the colon only: readline's word
only "lsmfs $tmp/disk0:$tmp/di" "$tmp/disk0" "$tmp/disk1"
has 'lsmfs disk0:disk1:' data disk0 disk1 m0
lacks 'lsmfs disk0:' disk-file
only 'lsmfs disk0:spa' 'spa ce'
only 'lsmfs disk0:disk1 da' data # the mount point
only 'lsmfs -f -o ro,degraded disk0:disk1 da' data
only 'lsmfs disk0 data d' # nothing after the mount point
(
    COMP_WORDBREAKS=${COMP_WORDBREAKS//:/} # then the word is the whole list
    only 'lsmfs disk0:di' disk0:disk0/ disk0:disk1/
    nospace 'lsmfs disk0:di'
    exit $failed
) || failed=1

# mkfs.lsmfs [options] DISK [DISK...]: one directory per word, no DISK:DISK
has 'mkfs.lsmfs --' --label --uuid --sections --chunk-size --inline-max \
    --meta-copies --meta --filter --data-copies --placement --force --quiet
has 'mkfs.lsmfs -' -L -U -f -q
only 'mkfs.lsmfs di' disk0 disk1
only 'mkfs.lsmfs -f -L vol disk0 di' disk0 disk1
only 'mkfs.lsmfs disk0:di' # a DISK is one directory: nothing named disk0:di*
only 'mkfs.lsmfs -L ' # a label
only 'mkfs.lsmfs --filter ' bloom elastic quotient none
only 'mkfs.lsmfs --meta-copies ' 1 2 3 4
only 'mkfs.lsmfs --data-copies ' 1 2
only 'mkfs.lsmfs --placement ' spread together
only 'mkfs.lsmfs --meta m' m0 m1
only 'mkfs.lsmfs --meta m0,m' m0,m0/ m0,m1/
only 'mkfs.lsmfs --meta=m0,m' m0,m0/ m0,m1/

# fsck.lsmfs [-n|-y|-p] [-f] [-v] [-C FD] [--scrub] [--backup DIR] [--degraded] [--use-copy N] DISK...
only 'fsck.lsmfs --sc' --scrub
has 'fsck.lsmfs -' -n -y -p -f -v -C --scrub --backup --degraded --use-copy --list-problems
only 'fsck.lsmfs -n di' disk0 disk1
only 'fsck.lsmfs -y -C 3 disk0:disk1:di' disk0 disk1
only 'fsck.lsmfs --backup d' data disk0 disk1
only 'fsck.lsmfs --backup=d' data disk0 disk1
only 'fsck.lsmfs -n --backup out di' disk0 disk1
only 'fsck.lsmfs disk0 ' # one operand
only 'fsck.lsmfs -y --use-copy 1 di' disk0 disk1
only 'fsck.lsmfs --list-problems ' # no operand

# lsmfs-inspect [--json] [--raw HEX] [--backup DIR] DISK[:DISK...] COMMAND [ARGS]
has 'lsmfs-inspect --' --json --raw --backup
only 'lsmfs-inspect di' disk0 disk1
only 'lsmfs-inspect disk0:di' disk0 disk1
only 'lsmfs-inspect disk0:disk1 ' super sections stat ls levels keys stats
only 'lsmfs-inspect --json --backup out disk0 st' stat stats
if ((${#key_letters[@]})); then
    only 'lsmfs-inspect disk0 keys ' "${key_letters[@]}" # fs/format/schema.c's key table
else
    echo "ok - # SKIP lsmfs-inspect keys against the key table: no KEY_TYPES given"
fi
only 'lsmfs-inspect --raw 0a disk0 keys C' C
only 'lsmfs-inspect disk0 super ' # no argument
only 'lsmfs-inspect --backup o' out

# lsmfs-disk DISK[:DISK...]|MOUNTPOINT COMMAND [ARGS] [OPTIONS]
only 'lsmfs-disk /mnt/lsmfs ' status list stats rebalance move add remove replace \
    copy backup restore convert scrub
only 'lsmfs-disk /mnt/lsmfs convert --' --copies --placement
only 'lsmfs-disk /mnt/lsmfs convert --copies ' 1 2
only 'lsmfs-disk /mnt/lsmfs convert --placement ' spread together
only 'lsmfs-disk disk0:disk1 re' rebalance remove replace restore
has 'lsmfs-disk ' /mnt/lsmfs '/mnt/with space' disk0 disk1 # lsmfs mounts too
lacks 'lsmfs-disk ' /mnt/other disk-file # another FUSE filesystem, a file
lacks 'lsmfs-disk ' /mnt/a:b # a ':' makes it a disk list
lacks 'lsmfs-disk /mnt/a:' b
only 'lsmfs-disk /mnt/w' '/mnt/with space'
only 'lsmfs-disk disk0:di' disk0 disk1 # a list: no mount points
only 'lsmfs-disk /mnt/lsmfs copy ' add remove move
only 'lsmfs-disk /mnt/lsmfs copy add d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs copy remove ' # a copy number
only 'lsmfs-disk /mnt/lsmfs copy move 1 d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs add d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs --weight 3 add d' data disk0 disk1
only 'lsmfs-disk disk0:disk1 backup o' out
only 'lsmfs-disk disk0:disk1 restore o' out
only 'lsmfs-disk /mnt/lsmfs move 3 ' # a section, a disk index
only 'lsmfs-disk /mnt/lsmfs remove --' --dry-run --evacuate --lost
only 'lsmfs-disk /mnt/lsmfs status --' --json
only 'lsmfs-disk /mnt/lsmfs stats -' -z --reset -c --check --json
only 'lsmfs-disk /mnt/lsmfs st' status stats
only 'lsmfs-disk /mnt/lsmfs add --' --force --weight --no-balance
has 'lsmfs-disk --' --json --dry-run --weight --force --no-balance --evacuate --lost --reset \
    --check --rate
only 'lsmfs-disk /mnt/lsmfs scrub ' start status cancel resume
only 'lsmfs-disk /mnt/lsmfs scrub st' start status
only 'lsmfs-disk /mnt/lsmfs scrub start -' -r --rate -B --json
only 'lsmfs-disk /mnt/lsmfs scrub resume --' --rate --json
only 'lsmfs-disk /mnt/lsmfs scrub status -' --json
only 'lsmfs-disk /mnt/lsmfs scrub cancel -' # none
only 'lsmfs-disk /mnt/lsmfs scrub start -r ' # a rate
only 'lsmfs-disk /mnt/lsmfs scrub start --rate 50M ' # nothing more
only 'lsmfs-disk /mnt/lsmfs remove --lost mi' missing
only 'lsmfs-disk /mnt/lsmfs remove mi' # `missing` only with --lost
only 'lsmfs-disk /mnt/lsmfs remove --lost d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs replace --' --dry-run --force --evacuate --lost
only 'lsmfs-disk /mnt/lsmfs replace mi' missing
only 'lsmfs-disk /mnt/lsmfs replace d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs replace missing d' data disk0 disk1
only 'lsmfs-disk /mnt/lsmfs replace -f 1 disk1 ' # nothing more

# lsmfs-bench seqwrite [DIR...] [OPTIONS]
only 'lsmfs-bench ' seqwrite
only 'lsmfs-bench --size 1G s' seqwrite
only 'lsmfs-bench seqwrite di' disk0 disk1
only 'lsmfs-bench seqwrite disk0 --out o' out
has 'lsmfs-bench --' --disks --size --bs --files --jobs --fsync --compare \
    --rounds --out --mkfs-opts --no-drop-caches
only 'lsmfs-bench seqwrite --compare raw,m' raw,mergerfs
only 'lsmfs-bench seqwrite --compare=raw,m' raw,mergerfs
only 'lsmfs-bench --fsync ev' every:
only 'lsmfs-bench -o no_' no_writeback no_direct no_dircache
only 'lsmfs-bench -o ro,cache_mib=8,inode_' 8,inode_cache=

exit $failed
