package calc

// Names lists the operations; this file is renamed in the new version.
var Names = []string{"abs", "add", "sub", "mul", "div", "mod", "neg", "pow"}
