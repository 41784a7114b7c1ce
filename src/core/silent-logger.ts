/** A logger that drops everything: the default where no logger is wired (library use, tests). Satisfies the Logger port. */
export const silentLogger = { debug() {}, info() {}, warn() {}, error() {} };
