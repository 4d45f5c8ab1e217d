// Makes `@svc/<lib>` resolvable from the compiled tree: dist/node_modules/@svc/<lib> points at
// dist/libs/<lib>/src. Node finds it by walking up from any file under dist/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const target = path.join(root, 'dist', 'node_modules', '@svc');
fs.rmSync(target, { recursive: true, force: true });
for (const lib of fs.readdirSync(path.join(root, 'libs'))) {
  if (!fs.existsSync(path.join(root, 'dist', 'libs', lib, 'src', 'index.js'))) continue;
  const dir = path.join(target, lib);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'index.js'), `module.exports = require('../../../libs/${lib}/src/index.js');\n`);
}
