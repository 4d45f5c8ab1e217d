import { ListMethodRewriter } from './list-method';

function feed(rewriter: ListMethodRewriter, text: string, splitEvery?: number): string {
  const bytes = Buffer.from(text, 'latin1');
  if (!splitEvery) return rewriter.transform(bytes).toString('latin1');
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += splitEvery) {
    out.push(rewriter.transform(Buffer.from(bytes.subarray(i, i + splitEvery))).toString('latin1'));
  }
  return out.join('');
}

describe('ListMethodRewriter', () => {
  it('rewrites LIST to LINK at the start of a request', () => {
    expect(feed(new ListMethodRewriter(), 'LIST /v1/secret/ HTTP/1.1\r\nHost: x\r\n\r\n')).toBe(
      'LINK /v1/secret/ HTTP/1.1\r\nHost: x\r\n\r\n',
    );
  });

  it('leaves other methods and bodies that start with LIST alone', () => {
    const body = 'LIST /v1/x HTTP/1.1';
    const req = `POST /v1/a HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    expect(feed(new ListMethodRewriter(), req)).toBe(req);
  });

  it('follows keep-alive framing with content-length and chunked bodies, whatever the chunking', () => {
    const first = 'POST /v1/a HTTP/1.1\r\nContent-Length: 4\r\n\r\nLIST';
    const second = 'PUT /v1/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nLIST\r\n0\r\nX-T: 1\r\n\r\n';
    const third = 'LIST /v1/c HTTP/1.1\r\n\r\n';
    for (const split of [undefined, 1, 2, 3, 7]) {
      const out = feed(new ListMethodRewriter(), first + second + '\r\n' + third, split);
      expect(out).toBe(first + second + '\r\n' + third.replace('LIST', 'LINK'));
    }
  });

  it('never turns an unknown method into a valid one', () => {
    expect(feed(new ListMethodRewriter(), 'LISX / HTTP/1.1\r\n\r\n')).toBe('LISX / HTTP/1.1\r\n\r\n');
    const split = feed(new ListMethodRewriter(), 'LISK / HTTP/1.1\r\n\r\n', 3);
    expect(split.startsWith('LINK')).toBe(false);
  });
});
