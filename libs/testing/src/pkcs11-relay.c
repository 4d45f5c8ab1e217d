/*
 * A PKCS#11 module for tests (built by pkcs11-relay.ts): it hands every call to another module
 * (TARGET_LIBRARY, SoftHSM2) and obeys files the test puts in CONTROL_DIRECTORY:
 *   silent          the calls a token would answer wait, without answering, until it is removed;
 *                   each waiting process appends its id to "stalled";
 *   close-sessions  the next call first closes every session of this process (as an HSM that
 *                   restarted would have), then removes the file.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "pkcs11.h"

static CK_FUNCTION_LIST relay;
static CK_FUNCTION_LIST_PTR target;

static void controlPath(char *path, size_t size, const char *name) {
  snprintf(path, size, "%s/%s", CONTROL_DIRECTORY, name);
}

static int controlFileExists(const char *name) {
  char path[4096];
  controlPath(path, sizeof path, name);
  return access(path, F_OK) == 0;
}

static void waitWhileSilent(void) {
  if (!controlFileExists("silent")) return;
  char path[4096];
  controlPath(path, sizeof path, "stalled");
  FILE *stalled = fopen(path, "a");
  if (stalled) {
    fprintf(stalled, "%d\n", (int)getpid());
    fclose(stalled);
  }
  const struct timespec pause = {0, 20 * 1000 * 1000};
  while (controlFileExists("silent")) nanosleep(&pause, NULL);
}

static void closeSessionsWhenAsked(void) {
  char path[4096];
  controlPath(path, sizeof path, "close-sessions");
  if (unlink(path) != 0) return;
  CK_SLOT_ID slots[64];
  CK_ULONG count = 64;
  if (target->C_GetSlotList(CK_FALSE, slots, &count) != CKR_OK) return;
  for (CK_ULONG i = 0; i < count; i++) target->C_CloseAllSessions(slots[i]);
}

static CK_RV relayInitialize(CK_VOID_PTR args) {
  waitWhileSilent();
  return target->C_Initialize(args);
}

/* The calls after C_Initialize that reach the token, as (name, parameters, arguments): each waits
 * while silent, then is handed on. */
#define RELAYED_CALLS(CALL) \
  CALL(C_GetSlotList, (CK_BBOOL present, CK_SLOT_ID_PTR list, CK_ULONG_PTR count), (present, list, count)) \
  CALL(C_GetTokenInfo, (CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info), (slot, info)) \
  CALL(C_OpenSession, (CK_SLOT_ID slot, CK_FLAGS flags, CK_VOID_PTR app, CK_NOTIFY notify, CK_SESSION_HANDLE_PTR session), (slot, flags, app, notify, session)) \
  CALL(C_Login, (CK_SESSION_HANDLE session, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin, CK_ULONG pinLength), (session, user, pin, pinLength)) \
  CALL(C_FindObjectsInit, (CK_SESSION_HANDLE session, CK_ATTRIBUTE_PTR template, CK_ULONG count), (session, template, count)) \
  CALL(C_FindObjects, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE_PTR objects, CK_ULONG max, CK_ULONG_PTR count), (session, objects, max, count)) \
  CALL(C_EncryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key), (session, mechanism, key)) \
  CALL(C_Encrypt, (CK_SESSION_HANDLE session, CK_BYTE_PTR in, CK_ULONG inLength, CK_BYTE_PTR out, CK_ULONG_PTR outLength), (session, in, inLength, out, outLength)) \
  CALL(C_DecryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key), (session, mechanism, key)) \
  CALL(C_Decrypt, (CK_SESSION_HANDLE session, CK_BYTE_PTR in, CK_ULONG inLength, CK_BYTE_PTR out, CK_ULONG_PTR outLength), (session, in, inLength, out, outLength)) \
  CALL(C_GenerateKey, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_ATTRIBUTE_PTR template, CK_ULONG count, CK_OBJECT_HANDLE_PTR key), (session, mechanism, template, count, key))

#define DEFINE_RELAY(name, params, args) \
  static CK_RV relay_##name params { \
    waitWhileSilent(); \
    closeSessionsWhenAsked(); \
    return target->name args; \
  }
#define INSTALL_RELAY(name, params, args) relay.name = relay_##name;

RELAYED_CALLS(DEFINE_RELAY)

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list) {
  if (!target) {
    void *library = dlopen(TARGET_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) return CKR_GENERAL_ERROR;
    CK_C_GetFunctionList getFunctionList = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    if (!getFunctionList) return CKR_GENERAL_ERROR;
    CK_FUNCTION_LIST_PTR functions;
    CK_RV rv = getFunctionList(&functions);
    if (rv != CKR_OK) return rv;
    relay = *functions;
    relay.C_Initialize = relayInitialize;
    RELAYED_CALLS(INSTALL_RELAY)
    target = functions;
  }
  *list = &relay;
  return CKR_OK;
}
