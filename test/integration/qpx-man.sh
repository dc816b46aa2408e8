#!/bin/sh
# The manual pages: each renders without a groff warning, and each says
# what its program does today: every option of qpxrun --help and of
# softverbs-stat's usage is in its page, and every SOFTVERBS_* variable
# softverbs reads (include/softverbs/softverbs.h, sv_cm_addr.c) is in
# softverbs(7).
. "$QPX_SRCDIR/test/integration/lib.sh"
command -v groff >/dev/null || qpx_skip_all "groff missing"
man=$QPX_SRCDIR/docs/man
build=${QPX_BUILDDIR:-$(cd ../.. && pwd)}

for page in qpxrun.1 softverbs-stat.1 softverbs-setup.1 softverbs.7; do
    warn=$(groff -man -ww -z "$man/$page" 2>&1)
    if [ -f "$man/$page" ] && [ -z "$warn" ]; then
        qpx_pass "$page renders without warnings"
    else
        qpx_fail "$page: ${warn:-missing}"
    fi
done

# page_has PAGE WORD: WORD appears in the page (groff escapes removed)
page_has() {
    sed 's/\\-/-/g; s/\\f[BIRP]//g' "$man/$1" | grep -q -- "$2"
}

opts=$("$build/contrib/qpxrun" --help 2>&1 | grep -oE '^  -(-[a-z]+|[a-z])' | sed 's/^ *//')
missing=""
for o in $opts; do page_has qpxrun.1 "$o" || missing="$missing $o"; done
if [ -n "$opts" ] && [ -z "$missing" ]; then
    qpx_pass "qpxrun.1 has every option of qpxrun --help ($(echo $opts | tr '\n' ' '))"
else
    qpx_fail "qpxrun.1 lacks:${missing:- (no options read from qpxrun --help)}"
fi

stat=$build/src/softverbs/softverbs-stat
opts=$(LD_LIBRARY_PATH=$build/src/softverbs/.libs "$stat" --bad-option 2>&1 |
       grep -oE '\[-[a-z]' | sed 's/\[//')
missing=""
for o in $opts; do page_has softverbs-stat.1 "$o" || missing="$missing $o"; done
if [ -n "$opts" ] && [ -z "$missing" ]; then
    qpx_pass "softverbs-stat.1 has every option of its usage ($(echo $opts | tr '\n' ' '))"
else
    qpx_fail "softverbs-stat.1 lacks:${missing:- (no usage read)}"
fi

vars=$(sed -n 's/.*"\(SOFTVERBS_[A-Z0-9_]*\)".*/\1/p' \
           "$QPX_SRCDIR/include/softverbs/softverbs.h" \
           "$QPX_SRCDIR/src/softverbs/sv_cm_addr.c" | sort -u)
missing=""
for v in $vars; do page_has softverbs.7 "$v" || missing="$missing $v"; done
if [ -n "$vars" ] && [ -z "$missing" ]; then
    qpx_pass "softverbs.7 documents all $(echo $vars | wc -w) SOFTVERBS_* variables"
else
    qpx_fail "softverbs.7 lacks:${missing:- (no variables read from the sources)}"
fi
qpx_finish
