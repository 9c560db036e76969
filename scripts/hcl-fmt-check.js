// For each HCL file named on the command line, print "clean <path>" when `terraform fmt` (HashiCorp's formatter,
// @cdktf/hcl-tools) leaves it unchanged, else "dirty <path>".
const { format } = require('@cdktf/hcl-tools');
const fs = require('fs');
(async () => {
  for (const f of process.argv.slice(2)) {
    const text = fs.readFileSync(f, 'utf8');
    let out;
    try { out = await format(text); } catch (e) { out = null; }
    console.log((out === text ? 'clean ' : 'dirty ') + f);
  }
})();
