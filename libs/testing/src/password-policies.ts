/** A sample password policy (sys/policies/password): twelve characters, lower-case letters and at least two digits. */
export const SAMPLE_PASSWORD_POLICY = `length = 12
rule "charset" {
  charset   = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}
rule "charset" {
  charset   = "0123456789"
  min-chars = 2
}
`;
