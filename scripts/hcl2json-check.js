// Parse each HCL file named on the command line with HashiCorp's parser (@cdktf/hcl2json);
// print one line per file: "ok <path>" or "FAIL <path>: <first line of the error>".
const { parse } = require('@cdktf/hcl2json');
const fs = require('fs');
(async () => {
  for (const f of process.argv.slice(2)) {
    try {
      await parse(f, fs.readFileSync(f, 'utf8'));
      console.log('ok ' + f);
    } catch (e) {
      console.log('FAIL ' + f + ': ' + String(e).split('\n')[0]);
    }
  }
})();
