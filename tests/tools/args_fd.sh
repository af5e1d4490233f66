# Sourced by the fake workers: quald (and qual-calibrate) hand a worker its
# command line on stdin, as `--args-fd 0` alone (NUL-terminated arguments;
# proto/strv.h), never in its argv. Sets the positional parameters to them.
if [ "$1" = --args-fd ] && [ "$2" = 0 ] && [ $# -eq 2 ]; then
  eval "set -- $(tr '\0' '\n' | sed "s/'/'\\\\''/g; s/.*/'&'/" | tr '\n' ' ')"
fi
