// Makes `@svc/<lib>` resolvable from a compiled tree (argv[2]: dist, or dist-bench for the bench and
// its test helpers): <out>/node_modules/@svc/<lib> points at <out>/libs/<lib>/src. Node finds it by
// walking up from any file under <out>/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const out = path.join(root, process.argv[2]);
const target = path.join(out, 'node_modules', '@svc');
fs.rmSync(target, { recursive: true, force: true });
for (const lib of fs.readdirSync(path.join(root, 'libs'))) {
  if (!fs.existsSync(path.join(out, 'libs', lib, 'src', 'index.js'))) continue;
  const dir = path.join(target, lib);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'index.js'), `module.exports = require('../../../libs/${lib}/src/index.js');\n`);
}
