// The BFCL slice's entry into the domain's registries: its tool kind, reward and dataset converter become
// built-ins like any other. The slice sits above tools/, rewards/ and data/, so they cannot import it; the stages
// import this module (or the one part they need, to load no more than before) before they resolve a name.
import './register-converter.ts';
import './register-reward.ts';
import './register-tool.ts';
