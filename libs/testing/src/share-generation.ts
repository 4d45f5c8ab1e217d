import type { GenerateRootStatus } from '@svc/seal';

/** The status of a share generation (root token, DR operation token) with no attempt started; `otpLength`: the token's length. */
export function generationNotStarted(otpLength: number): GenerateRootStatus {
  return {
    started: false,
    nonce: '',
    progress: 0,
    required: 2,
    encoded_token: '',
    encoded_root_token: '',
    pgp_fingerprint: '',
    otp: '',
    otp_length: otpLength,
    complete: false,
  };
}
