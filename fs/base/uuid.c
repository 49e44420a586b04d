/*
 * uuid.c: the UUIDs of filesystems and disks (version 4, random), in the
 * 36-character text form the tools print and parse.
 */
#include "base.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

void lsmfs_uuid_format(const uint8_t uuid[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[uuid[i] >> 4];
		*p++ = hex[uuid[i] & 15];
	}
	*p = 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int lsmfs_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t out[16];
	if (strlen(s) != 36)
		return -EINVAL;
	size_t pos = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10) {
			if (s[pos] != '-')
				return -EINVAL;
			pos++;
		}
		int hi = hex_value(s[pos]), lo = hex_value(s[pos + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
		pos += 2;
	}
	memcpy(uuid, out, 16);
	return 0;
}

int lsmfs_uuid_generate(uint8_t uuid[16])
{
	size_t got = 0;
	while (got < 16) {
		ssize_t n = getrandom(uuid + got, 16 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	return 0;
}
